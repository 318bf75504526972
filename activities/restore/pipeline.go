package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// batchWindow is how many batches may be loaded ahead of the oldest one
// not yet stored: enough to keep every worker busy across a batch
// boundary, few enough to bound memory.
const batchWindow = 3

// pipeline applies the batches of one type with Concurrency items in
// flight across batch boundaries, and stores each batch's outcomes in
// batch order: a batch is committed only after every earlier one, so
// "batches before NextBatch are stored" stays true for the heartbeat.
type pipeline struct {
	run     *runlog.Run
	ap      *applier
	gr      string
	batches int
	// failuresLogged counts the failed items met, of which the first
	// maxLoggedFailures are logged.
	failuresLogged int
	// actions are the extensions that act on the type's items, called
	// through extensions; beat heartbeats while they answer.
	actions         []extcall.Action
	extensions      extcall.Caller
	beat            func()
	restore, backup string
	typ             v1alpha1.ResourceType
	// namespaceMapping is the restore's, for the extensions' requests;
	// dryRun says the restore is a dry run.
	namespaceMapping map[string]string
	dryRun           bool
	// board holds what the step waits on; ready judges the objects
	// items wait for.
	board *waitBoard
	ready *readiness
	// plan is the attempt's view of the restore's plan, through which
	// the additional items extensions ask for are restored; inFlight are
	// the completion of the batches the feed loaded, by index.
	plan     *applyPlan
	inFlight map[int]chan struct{}
}

const maxLoggedFailures = 100

// batchWork is one batch on its way through the pipeline.
type batchWork struct {
	index    int
	items    []Item
	outcomes []v1alpha1.ItemOutcome
	relinks  [][]relink
	left     atomic.Int32
	complete chan struct{} // closed when every item has an outcome
	// decided are the items extensions skipped or failed: their outcome
	// is set, and they are not applied.
	decided []bool
	// operations are those the extensions' answers started, per item;
	// those of the items restored are stored with the batch.
	operations [][]extcall.OperationRecord
	// waits are what each item waits for before it is created.
	waits [][]*itemWait
	// additional are the objects to restore before each item.
	additional [][]extension.ObjectRef
	// stored is set for a batch an earlier attempt already stored.
	stored *v1alpha1.TypeOutcome
	// storedDeferred counts that batch's pending owner references.
	storedDeferred int
}

type itemJob struct {
	batch *batchWork
	index int
}

// apply runs batches start..batches-1 and calls commit after each one is
// stored, in order.
func (p *pipeline) apply(ctx context.Context, start int, commit func(b int, o v1alpha1.TypeOutcome, deferred int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ordered := make(chan *batchWork, batchWindow)
	jobs := make(chan itemJob)
	var wg sync.WaitGroup
	for range p.ap.in.Options.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.work(ctx, cancel, jobs)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		defer close(ordered)
		if err := p.feed(ctx, start, ordered, jobs); err != nil {
			cancel(err)
		}
	}()
	if err := p.commitInOrder(ctx, ordered, commit); err != nil {
		cancel(err)
	}
	wg.Wait()
	// The first failure is the cause: an unreachable API server met by a
	// worker, not the "context canceled" it made the others see.
	return context.Cause(ctx)
}

// feed loads the batches in order and hands out their items.
func (p *pipeline) feed(ctx context.Context, start int, ordered chan<- *batchWork, jobs chan<- itemJob) error {
	for b := start; b < p.batches; b++ {
		bw := &batchWork{index: b, complete: make(chan struct{})}
		if p.inFlight == nil {
			p.inFlight = map[int]chan struct{}{}
		}
		p.inFlight[b] = bw.complete
		outcome, deferred, done, err := storedBatch(ctx, p.run, p.gr, b)
		if err != nil {
			return err
		}
		if done {
			bw.stored, bw.storedDeferred = &outcome, deferred
			close(bw.complete)
		} else if err := p.load(ctx, bw); err != nil {
			return err
		}
		select {
		case ordered <- bw:
		case <-ctx.Done():
			return nil
		}
		for i := range bw.items {
			if bw.decided != nil && bw.decided[i] {
				continue
			}
			select {
			case jobs <- itemJob{batch: bw, index: i}:
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
}

func (p *pipeline) load(ctx context.Context, bw *batchWork) error {
	err := p.run.Loc.ReadLines(ctx, p.run.Restore.Batch(p.gr, bw.index), func(line []byte) error {
		var it Item
		if err := json.Unmarshal(line, &it); err != nil {
			return fmt.Errorf("decode item: %w", err)
		}
		bw.items = append(bw.items, it)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read batch %d of %s: %w", bw.index, p.gr, err)
	}
	bw.outcomes = make([]v1alpha1.ItemOutcome, len(bw.items))
	bw.relinks = make([][]relink, len(bw.items))
	bw.left.Store(int32(len(bw.items)))
	if err := p.takeRestoredAhead(ctx, bw); err != nil {
		return err
	}
	if err := p.extend(ctx, bw); err != nil {
		return err
	}
	if err := p.restoreFirst(ctx, bw); err != nil {
		return err
	}
	if bw.left.Load() == 0 {
		close(bw.complete)
	}
	return nil
}

// work applies items until jobs close; an unreachable API server stops
// the whole pipeline (the activity is retried from its heartbeat).
func (p *pipeline) work(ctx context.Context, cancel context.CancelCauseFunc, jobs <-chan itemJob) {
	for j := range jobs {
		if ctx.Err() != nil {
			continue // drain
		}
		why, err := p.awaitReady(ctx, j.batch, j.index)
		if err != nil {
			cancel(err)
			continue
		}
		if why != "" {
			j.batch.outcomes[j.index] = p.outcome(j.batch.items[j.index], v1alpha1.ItemFailed, why)
			if j.batch.left.Add(-1) == 0 {
				close(j.batch.complete)
			}
			continue
		}
		o, r, err := p.ap.apply(ctx, j.batch.items[j.index])
		if err != nil {
			cancel(err)
			continue
		}
		j.batch.outcomes[j.index], j.batch.relinks[j.index] = o, r
		if j.batch.left.Add(-1) == 0 {
			close(j.batch.complete)
		}
	}
}

// commitInOrder stores each batch's outcomes once all its items are done,
// oldest batch first.
func (p *pipeline) commitInOrder(ctx context.Context, ordered <-chan *batchWork,
	commit func(b int, o v1alpha1.TypeOutcome, deferred int) error) error {
	for bw := range ordered {
		select {
		case <-bw.complete:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		var outcome v1alpha1.TypeOutcome
		deferred := bw.storedDeferred
		if bw.stored != nil {
			outcome = *bw.stored
		} else {
			var err error
			if outcome, deferred, err = p.store(ctx, bw); err != nil {
				return err
			}
		}
		if err := commit(bw.index, outcome, deferred); err != nil {
			return err
		}
	}
	return nil
}

// store writes a batch's pending owner references, then its outcomes.
func (p *pipeline) store(ctx context.Context, bw *batchWork) (v1alpha1.TypeOutcome, int, error) {
	var relinks []relink
	for _, r := range bw.relinks {
		relinks = append(relinks, r...)
	}
	if len(relinks) > 0 {
		if err := p.run.Loc.WriteAll(ctx, p.run.Restore.Relink(p.gr, bw.index), jsonLines(relinks)); err != nil {
			return v1alpha1.TypeOutcome{}, 0, err
		}
	}
	if err := p.storeOperations(ctx, bw); err != nil {
		return v1alpha1.TypeOutcome{}, 0, err
	}
	if err := p.run.Loc.WriteAll(ctx, p.run.Restore.BatchResult(p.gr, bw.index), jsonLines(bw.outcomes)); err != nil {
		return v1alpha1.TypeOutcome{}, 0, err
	}
	for _, o := range bw.outcomes {
		if o.Result != v1alpha1.ItemFailed {
			continue
		}
		// The attempt's log is held in memory until it ends, and
		// results.json has every failure: the log names the first ones.
		switch p.failuresLogged++; {
		case p.failuresLogged <= maxLoggedFailures:
			p.run.Log.Warn("Item not restored", zap.String("resource", o.Resource), zap.String("namespace", o.Namespace),
				zap.String("name", o.Name), zap.String("error", o.Reason))
		case p.failuresLogged == maxLoggedFailures+1:
			p.run.Log.Warn("More items of this type not restored; results.json lists each", zap.String("resource", o.Resource))
		}
	}
	return count(bw.outcomes), len(relinks), nil
}

// storeOperations records the operations started for the batch's items
// that were restored, before the batch's outcomes: a stored batch has
// its operations stored. An item that failed or was left as it existed
// starts none.
func (p *pipeline) storeOperations(ctx context.Context, bw *batchWork) error {
	if len(p.actions) == 0 {
		return nil
	}
	var ops []extcall.OperationRecord
	for i, recs := range bw.operations {
		if bw.outcomes[i].Result == v1alpha1.ItemRestored {
			ops = append(ops, recs...)
		}
	}
	key := p.run.Restore.ExtensionOperations(p.gr, bw.index)
	if len(ops) == 0 {
		// What an attempt before this one recorded is not this batch's.
		return p.run.Loc.Delete(ctx, key)
	}
	return p.run.Loc.WriteAll(ctx, key, jsonLines(ops))
}

// awaitReady waits until what an item waits for is ready, and says why
// it cannot be created when that does not come. A dry run creates
// nothing to wait for, and waits for nothing.
func (p *pipeline) awaitReady(ctx context.Context, bw *batchWork, i int) (string, error) {
	if bw.waits == nil || p.dryRun {
		return "", nil
	}
	for _, w := range bw.waits[i] {
		if why, err := p.ready.await(ctx, w, p.beat); why != "" || err != nil {
			return why, err
		}
	}
	return "", nil
}
