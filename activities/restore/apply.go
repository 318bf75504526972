package restore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// ApplyProgress is the heartbeat of an apply activity: the types of its
// input done so far, and where the current one stands. A retried attempt
// skips the types done and starts the current one at NextBatch with the
// counts so far.
type ApplyProgress struct {
	Done      []v1alpha1.TypeApplied `json:"done,omitempty"`
	NextBatch int                    `json:"nextBatch"`
	Outcome   v1alpha1.TypeOutcome   `json:"outcome"`
	Deferred  int                    `json:"deferred"`
	// Reachability says since when, and why, the API server has been
	// unreachable: what the Temporal UI shows of a waiting apply.
	cluster.Reachability
	// Waiting are some of the objects items wait for, as their
	// extensions asked: what describe shows of a waiting apply.
	Waiting []v1alpha1.ExtensionWait `json:"waiting,omitempty"`
}

// relink is an owner reference that could not be set when its object was
// created, because the owner was not restored yet.
type relink struct {
	Type      v1alpha1.ResourceType `json:"type"`
	Namespace string                `json:"namespace,omitempty"`
	Name      string                `json:"name"`
	Owner     metav1.OwnerReference `json:"owner"`
}

// ApplyResources applies the batches of each type of its input in order,
// one type after another. Each batch's outcomes are stored before the
// heartbeat that records it, so a retry neither re-applies a finished
// batch nor loses its outcomes; an item of the batch cut short that was
// already created is recognised by its restore label and counted once. A
// type counts as done in the heartbeat only once its last batch is
// stored.
func (a *Activities) ApplyResources(ctx context.Context, in v1alpha1.ApplyInput) (*v1alpha1.ApplyResult, error) {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()

	var prog ApplyProgress
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &prog); err != nil || len(prog.Done) > len(in.Types) {
			prog = ApplyProgress{}
		}
		done := make([]string, 0, len(prog.Done))
		for _, d := range prog.Done {
			done = append(done, d.Resource)
		}
		if len(prog.Done) < len(in.Types) {
			run.Log.Info("Resuming", zap.String("resource", in.Types[len(prog.Done)].GroupResource()), zap.Int("batch", prog.NextBatch),
				zap.Strings("done", done))
		}
	}
	clients, err := actas.Clients(a.Clients, in.Options.ActingAs)
	if err != nil {
		return nil, err
	}
	owners := newOwnerResolver(clients)
	plan, err := newApplyPlan(ctx, a, run, in, clients, owners)
	if err != nil {
		return nil, err
	}
	for i := len(prog.Done); i < len(in.Types); i++ {
		t := in.Types[i]
		if err := a.applyType(ctx, run, plan, in, t, &prog); err != nil {
			return nil, fmt.Errorf("apply %s: %w", t.GroupResource(), err)
		}
		prog.Done = append(prog.Done, v1alpha1.TypeApplied{Resource: t.GroupResource(), Outcome: prog.Outcome, Deferred: prog.Deferred})
		prog.NextBatch, prog.Outcome, prog.Deferred, prog.Waiting = 0, v1alpha1.TypeOutcome{}, 0, nil
		activity.RecordHeartbeat(ctx, prog)
	}
	return &v1alpha1.ApplyResult{Types: prog.Done}, nil
}

// applyType applies the batches of one type from prog.NextBatch on,
// counting into prog.
func (a *Activities) applyType(ctx context.Context, run *runlog.Run, plan *applyPlan,
	in v1alpha1.ApplyInput, t v1alpha1.RestoreType, prog *ApplyProgress) error {
	gr := t.GroupResource()
	log := run.Log.With(zap.String("resource", gr))
	clients := plan.clients
	ap := plan.applier(t)
	// The feed heartbeats while it waits on extensions, as the commits
	// move prog on.
	actions, err := plan.actions(gr)
	if err != nil {
		return err
	}
	board := newWaitBoard()
	var mu sync.Mutex
	record := func() {
		prog.Waiting = board.shown()
		activity.RecordHeartbeat(ctx, *prog)
	}
	heartbeat := func() {
		mu.Lock()
		defer mu.Unlock()
		record()
	}
	pl := &pipeline{run: run, ap: ap, gr: gr, batches: t.Batches, actions: actions, extensions: a.Extensions, beat: heartbeat,
		restore: in.Restore, backup: in.Backup, typ: t.ResourceType, namespaceMapping: in.NamespaceMapping, dryRun: in.DryRun, board: board, ready: newReadiness(clients, board),
		plan: plan}
	commit := func(b int, outcome v1alpha1.TypeOutcome, deferred int) error {
		mu.Lock()
		prog.NextBatch, prog.Outcome, prog.Deferred = b+1, prog.Outcome.Add(outcome), prog.Deferred+deferred
		record()
		mu.Unlock()
		return clock.Sleep(ctx, a.BatchInterval)
	}
	// While the API server is unreachable, wait and go on from the last
	// stored batch, up to the restore's limit.
	err = prog.Reachability.Do(ctx, ap.in.Options.ClusterUnreachableTimeout.Duration, log, heartbeat, func() error {
		return pl.apply(ctx, prog.NextBatch, commit)
	})
	if err != nil {
		return err
	}
	log.Info("Applied resource type", zap.Int("restored", prog.Outcome.Restored), zap.Int("skipped", prog.Outcome.Skipped),
		zap.Int("failed", prog.Outcome.Failed), zap.Int("deferredOwners", prog.Deferred))
	return nil
}

// storedBatch returns the outcome of a batch an earlier attempt applied
// and stored but did not live to report.
func storedBatch(ctx context.Context, run *runlog.Run, gr string, b int) (v1alpha1.TypeOutcome, int, bool, error) {
	var outcomes []v1alpha1.ItemOutcome
	err := run.Loc.ReadLines(ctx, run.Restore.BatchResult(gr, b), func(line []byte) error {
		var o v1alpha1.ItemOutcome
		if err := json.Unmarshal(line, &o); err != nil {
			return err
		}
		outcomes = append(outcomes, o)
		return nil
	})
	switch {
	case errors.Is(err, location.ErrNotFound):
		return v1alpha1.TypeOutcome{}, 0, false, nil
	case err != nil:
		return v1alpha1.TypeOutcome{}, 0, false, fmt.Errorf("read stored outcome of batch %d of %s: %w", b, gr, err)
	}
	deferred := 0
	err = run.Loc.ReadLines(ctx, run.Restore.Relink(gr, b), func([]byte) error { deferred++; return nil })
	if err != nil && !errors.Is(err, location.ErrNotFound) {
		return v1alpha1.TypeOutcome{}, 0, false, err
	}
	return count(outcomes), deferred, true, nil
}

func count(outcomes []v1alpha1.ItemOutcome) v1alpha1.TypeOutcome {
	var t v1alpha1.TypeOutcome
	for _, o := range outcomes {
		switch o.Result {
		case v1alpha1.ItemRestored:
			t.Restored++
		case v1alpha1.ItemSkipped:
			t.Skipped++
		case v1alpha1.ItemFailed:
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
