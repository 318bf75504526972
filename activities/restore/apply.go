package restore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/activities/runlog"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/workflows"
)

// ApplyProgress is the heartbeat of an apply activity: a retried attempt
// starts at NextBatch with the counts so far.
type ApplyProgress struct {
	NextBatch int                   `json:"nextBatch"`
	Outcome   workflows.TypeOutcome `json:"outcome"`
	Deferred  int                   `json:"deferred"`
}

// relink is an owner reference that could not be set when its object was
// created, because the owner was not restored yet.
type relink struct {
	Type      workflows.ResourceType `json:"type"`
	Namespace string                 `json:"namespace,omitempty"`
	Name      string                 `json:"name"`
	Owner     metav1.OwnerReference  `json:"owner"`
}

// ApplyResources applies the batches of one resource type in order. Each
// batch's outcomes are stored before the heartbeat that records it, so a
// retry neither re-applies a finished batch nor loses its outcomes; an
// item of the batch cut short that was already created is recognised by
// its restore label and counted once.
func (a *Activities) ApplyResources(ctx context.Context, in workflows.ApplyInput) (*workflows.ApplyResult, error) {
	run, err := runlog.StartRestore(ctx, a.Log, in.Restore, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeLocation, err)
	}
	defer run.End()
	gr := in.Type.GroupResource()
	log := run.Log.With(zap.String("resource", gr))

	var prog ApplyProgress
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &prog) == nil {
		log.Info("Resuming", zap.Int("batch", prog.NextBatch), zap.Int("batches", in.Type.Batches))
	}
	ap := newApplier(a.Clients, in, newOwnerResolver(a.Clients))
	for b := prog.NextBatch; b < in.Type.Batches; b++ {
		outcome, deferred, done, err := storedBatch(ctx, run, gr, b)
		if err != nil {
			return nil, err
		}
		if !done {
			if outcome, deferred, err = a.applyBatch(ctx, run, ap, gr, b); err != nil {
				return nil, err
			}
		}
		prog.NextBatch, prog.Outcome, prog.Deferred = b+1, prog.Outcome.Add(outcome), prog.Deferred+deferred
		activity.RecordHeartbeat(ctx, prog)
		if err := sleep(ctx, a.BatchInterval); err != nil {
			return nil, err
		}
	}
	log.Info("Applied resource type", zap.Int("restored", prog.Outcome.Restored), zap.Int("skipped", prog.Outcome.Skipped),
		zap.Int("failed", prog.Outcome.Failed), zap.Int("deferredOwners", prog.Deferred))
	return &workflows.ApplyResult{Outcome: prog.Outcome, Deferred: prog.Deferred}, nil
}

// applyBatch applies one batch and stores its outcomes (and the owner
// references left for later), the relinks first.
func (a *Activities) applyBatch(ctx context.Context, run *runlog.Run, ap *applier, gr string, b int) (workflows.TypeOutcome, int, error) {
	var items []Item
	err := run.Loc.ReadLines(ctx, run.Restore.Batch(gr, b), func(line []byte) error {
		var it Item
		if err := json.Unmarshal(line, &it); err != nil {
			return fmt.Errorf("decode item: %w", err)
		}
		items = append(items, it)
		return nil
	})
	if err != nil {
		return workflows.TypeOutcome{}, 0, fmt.Errorf("read batch %d of %s: %w", b, gr, err)
	}
	outcomes, relinks, err := ap.applyAll(ctx, items)
	if err != nil {
		return workflows.TypeOutcome{}, 0, err
	}
	if len(relinks) > 0 {
		if err := run.Loc.WriteAll(ctx, run.Restore.Relink(gr, b), jsonLines(relinks)); err != nil {
			return workflows.TypeOutcome{}, 0, err
		}
	}
	if err := run.Loc.WriteAll(ctx, run.Restore.BatchResult(gr, b), jsonLines(outcomes)); err != nil {
		return workflows.TypeOutcome{}, 0, err
	}
	for _, o := range outcomes {
		if o.Result == workflows.ItemFailed {
			run.Log.Warn("Item not restored", zap.String("resource", o.Resource), zap.String("namespace", o.Namespace),
				zap.String("name", o.Name), zap.String("error", o.Reason))
		}
	}
	return count(outcomes), len(relinks), nil
}

// storedBatch returns the outcome of a batch an earlier attempt applied
// and stored but did not live to report.
func storedBatch(ctx context.Context, run *runlog.Run, gr string, b int) (workflows.TypeOutcome, int, bool, error) {
	var outcomes []workflows.ItemOutcome
	err := run.Loc.ReadLines(ctx, run.Restore.BatchResult(gr, b), func(line []byte) error {
		var o workflows.ItemOutcome
		if err := json.Unmarshal(line, &o); err != nil {
			return err
		}
		outcomes = append(outcomes, o)
		return nil
	})
	switch {
	case errors.Is(err, location.ErrNotFound):
		return workflows.TypeOutcome{}, 0, false, nil
	case err != nil:
		return workflows.TypeOutcome{}, 0, false, fmt.Errorf("read stored outcome of batch %d of %s: %w", b, gr, err)
	}
	deferred := 0
	err = run.Loc.ReadLines(ctx, run.Restore.Relink(gr, b), func([]byte) error { deferred++; return nil })
	if err != nil && !errors.Is(err, location.ErrNotFound) {
		return workflows.TypeOutcome{}, 0, false, err
	}
	return count(outcomes), deferred, true, nil
}

func count(outcomes []workflows.ItemOutcome) workflows.TypeOutcome {
	var t workflows.TypeOutcome
	for _, o := range outcomes {
		switch o.Result {
		case workflows.ItemRestored:
			t.Restored++
		case workflows.ItemSkipped:
			t.Skipped++
		case workflows.ItemFailed:
			t.Failed++
		}
	}
	return t
}

func jsonLines[T any](values []T) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, v := range values {
		_ = enc.Encode(v) // plain structs always encode
	}
	return buf.Bytes()
}

// applyAll applies items at the input's concurrency and returns their
// outcomes in item order. An unreachable API server stops the batch.
func (ap *applier) applyAll(ctx context.Context, items []Item) ([]workflows.ItemOutcome, []relink, error) {
	outcomes := make([]workflows.ItemOutcome, len(items))
	deferred := make([][]relink, len(items))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	sem := make(chan struct{}, ap.in.Options.Concurrency)
	for i := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			o, r, err := ap.apply(ctx, items[i])
			if err != nil {
				once.Do(func() { firstErr = err; cancel() })
				return
			}
			outcomes[i], deferred[i] = o, r
		}(i)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var relinks []relink
	for _, r := range deferred {
		relinks = append(relinks, r...)
	}
	return outcomes, relinks, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
