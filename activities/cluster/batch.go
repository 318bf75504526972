package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// CollectProgress is the heartbeat of a collect activity: the outcome of
// each type of its batch done so far, and where each type being
// collected stands, so a retried attempt resumes at the page after the
// last one stored.
//
// Done are the batch's first types, in order, and Current the type after
// them: a worker from before types were collected side by side reads
// only these, resumes at len(Done), and lists again the types of Later
// and Others, which overwrites their parts.
type CollectProgress struct {
	Done    []v1alpha1.TypeCollected `json:"done,omitempty"`
	Current TypeProgress             `json:"current"`
	// Later are the types done after a type before them that is not;
	// Others where the types being collected other than Current stand.
	Later  []v1alpha1.TypeCollected `json:"later,omitempty"`
	Others []TypeProgress           `json:"others,omitempty"`
	// Waiting are the extensions the step waits on now, for describe and
	// the Temporal UI.
	Waiting []v1alpha1.ExtensionWait `json:"waiting,omitempty"`
}

// typesSideBySide bounds the types of a batch collected at once: most
// types of a cluster are small, and their lists and writes are round
// trips that wait on the API server and the store, not work. On the
// 2-core bench machine, a whole-cluster backup of 100 ConfigMaps (14
// types not empty) took 0.27 s with 4 at once and 0.24 s with 8, in
// three interleaved pairs of runs: a gain about the size of the noise.
const typesSideBySide = 8

// CollectResources lists each resource type of its batch page by page and
// stores each page as a part, typesSideBySide types at once. Parts have
// deterministic names and are written before the heartbeat that records
// them, so a retry that resumes from the last heartbeat overwrites at
// most the pages it repeats: nothing is duplicated. A type's result is
// stored before the heartbeat that counts it done, so a retry skips the
// types already done.
func (a *Activities) CollectResources(ctx context.Context, in v1alpha1.CollectInput) (*v1alpha1.CollectResult, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()

	var plan StoredPlan
	if err := run.Loc.ReadJSON(ctx, run.Keys.Plan(), &plan); err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	b, err := newBatch(a, in, &plan, run)
	if err != nil {
		return nil, err
	}
	resumed := map[string]TypeProgress{}
	b.retry = run.Info().Attempt > 1 || activity.HasHeartbeatDetails(ctx)
	if activity.HasHeartbeatDetails(ctx) {
		var last CollectProgress
		if err := activity.GetHeartbeatDetails(ctx, &last); err == nil {
			resumed = b.resume(last)
		}
		var done []string
		for _, res := range b.done {
			if res != nil {
				done = append(done, res.Resource)
			}
		}
		run.Log.Info("Resuming a batch of collections", zap.Strings("done", done), zap.Int("types", len(in.Types)))
	}
	if err := b.collectAll(ctx, resumed); err != nil {
		return nil, err
	}
	out := &v1alpha1.CollectResult{Types: make([]v1alpha1.TypeCollected, len(in.Types))}
	for i, res := range b.done {
		out.Types[i] = *res
	}
	return out, nil
}

// collectAll collects the types not done yet, in the batch's order and
// typesSideBySide at once. A type extensions act on is collected alone:
// the pages it holds for them and the calls it makes are sized for one
// type, and the heartbeat names the extensions it waits on.
func (b *batch) collectAll(ctx context.Context, resumed map[string]TypeProgress) error {
	slots := semaphore.NewWeighted(typesSideBySide)
	g, gctx := errgroup.WithContext(ctx)
	for i, t := range b.in.Types {
		if b.done[i] != nil {
			continue
		}
		actions, err := extcall.Actions(b.plan.Extensions, t.GroupResource(), extcall.BackupSelector)
		if err != nil {
			_ = g.Wait()
			return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
		}
		weight := int64(1)
		if len(actions) > 0 {
			weight = typesSideBySide
		}
		if err := slots.Acquire(gctx, weight); err != nil {
			break // a type failed, or the activity is canceled
		}
		g.Go(func() error {
			defer slots.Release(weight)
			res, err := b.collectType(gctx, i, t, actions, resumed[t.GroupResource()])
			if err != nil {
				return fmt.Errorf("collect %s: %w", t.GroupResource(), err)
			}
			b.finish(gctx, i, res)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// batch is what the types of one collect activity share.
type batch struct {
	a      *Activities
	lister kube.Lister
	// actingAsCaller: the run impersonates its caller, whose Forbidden
	// is a namespace left out, not the worker's misconfiguration.
	actingAsCaller bool
	in             v1alpha1.CollectInput
	plan           *StoredPlan
	run            *runlog.Run
	nsGlobs        filter.Globs
	labels         filter.Labels
	// retry: an attempt before this one may have stored parts this one
	// will not store again (earlier_parts.go).
	retry bool

	// mu guards what the heartbeat is made of: the outcome of each type
	// done (by its index in the batch), where each type being collected
	// stands, and the extensions waited on.
	mu       sync.Mutex
	done     []*v1alpha1.TypeCollected
	inFlight map[int]TypeProgress
	waiting  []v1alpha1.ExtensionWait
}

func newBatch(a *Activities, in v1alpha1.CollectInput, plan *StoredPlan, run *runlog.Run) (*batch, error) {
	nsGlobs, err := filter.NewGlobs(plan.Spec.IncludedNamespaces, plan.Spec.ExcludedNamespaces)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
	}
	labels, err := filter.NewLabels(plan.Spec.LabelSelector, plan.Spec.OrLabelSelectors)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
	}
	lister, err := actas.Lister(a.Clients, a.Lister, in.Options.ActingAs)
	if err != nil {
		return nil, err
	}
	return &batch{a: a, lister: lister, actingAsCaller: in.Options.ActingAs != nil, in: in, plan: plan, run: run, nsGlobs: nsGlobs, labels: labels,
		done: make([]*v1alpha1.TypeCollected, len(in.Types)), inFlight: map[int]TypeProgress{}}, nil
}

// resume takes the types done from the last heartbeat, and returns where
// the others stood, by resource. Entries that name no type of the batch
// are ignored.
func (b *batch) resume(last CollectProgress) map[string]TypeProgress {
	index := make(map[string]int, len(b.in.Types))
	for i, t := range b.in.Types {
		index[t.GroupResource()] = i
	}
	for _, res := range append(append([]v1alpha1.TypeCollected{}, last.Done...), last.Later...) {
		if i, ok := index[res.Resource]; ok {
			b.done[i] = &res
		}
	}
	resumed := map[string]TypeProgress{}
	for _, p := range append([]TypeProgress{last.Current}, last.Others...) {
		if i, ok := index[p.Resource]; ok && b.done[i] == nil {
			resumed[p.Resource] = p
		}
	}
	return resumed
}

// beat records where the type at index i stands (when p is set) and
// sends the batch's heartbeat.
func (b *batch) beat(ctx context.Context, i int, p *TypeProgress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p != nil {
		b.inFlight[i] = *p
	}
	activity.RecordHeartbeat(ctx, b.details())
}

// finish counts the type at index i done and sends the heartbeat.
func (b *batch) finish(ctx context.Context, i int, res *v1alpha1.TypeCollected) {
	b.mu.Lock()
	b.done[i] = res
	delete(b.inFlight, i)
	b.mu.Unlock()
	b.beat(ctx, i, nil)
}

// setWaiting names the extensions the batch waits on (none: nil).
func (b *batch) setWaiting(w []v1alpha1.ExtensionWait) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting = w
}

// details are the heartbeat's: b.mu is held.
func (b *batch) details() CollectProgress {
	var p CollectProgress
	first := 0
	for first < len(b.done) && b.done[first] != nil {
		p.Done = append(p.Done, *b.done[first])
		first++
	}
	for _, res := range b.done[first:] {
		if res != nil {
			p.Later = append(p.Later, *res)
		}
	}
	flying := make([]int, 0, len(b.inFlight))
	for i := range b.inFlight {
		flying = append(flying, i)
	}
	sort.Ints(flying)
	for _, i := range flying {
		if i == first {
			p.Current = b.inFlight[i]
		} else {
			p.Others = append(p.Others, b.inFlight[i])
		}
	}
	p.Waiting = b.waiting
	return p
}
