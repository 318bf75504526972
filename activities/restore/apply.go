package restore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/activities/runlog"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/workflows"
)

// ApplyProgress is the heartbeat of an apply activity: a retried attempt
// starts at NextBatch with the counts so far.
type ApplyProgress struct {
	NextBatch int                   `json:"nextBatch"`
	Outcome   workflows.TypeOutcome `json:"outcome"`
	Deferred  int                   `json:"deferred"`
	// Reachability says since when, and why, the API server has been
	// unreachable: what the Temporal UI shows of a waiting apply.
	cluster.Reachability
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
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, in.Backup, in.Location)
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
	clients, err := actas.Clients(a.Clients, in.Options.ActingAs)
	if err != nil {
		return nil, err
	}
	ap := newApplier(clients, in, newOwnerResolver(clients))
	ap.namespaceExists = a.namespaceExists
	pl := &pipeline{run: run, ap: ap, gr: gr, batches: in.Type.Batches}
	commit := func(b int, outcome workflows.TypeOutcome, deferred int) error {
		prog.NextBatch, prog.Outcome, prog.Deferred = b+1, prog.Outcome.Add(outcome), prog.Deferred+deferred
		activity.RecordHeartbeat(ctx, prog)
		return clock.Sleep(ctx, a.BatchInterval)
	}
	// While the API server is unreachable, wait and go on from the last
	// stored batch, up to the restore's limit.
	heartbeat := func() { activity.RecordHeartbeat(ctx, prog) }
	err = prog.Reachability.Do(ctx, ap.in.Options.ClusterUnreachableTimeout.Duration, log, heartbeat, func() error {
		return pl.apply(ctx, prog.NextBatch, commit)
	})
	if err != nil {
		return nil, err
	}
	log.Info("Applied resource type", zap.Int("restored", prog.Outcome.Restored), zap.Int("skipped", prog.Outcome.Skipped),
		zap.Int("failed", prog.Outcome.Failed), zap.Int("deferredOwners", prog.Deferred))
	return &workflows.ApplyResult{Outcome: prog.Outcome, Deferred: prog.Deferred}, nil
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
