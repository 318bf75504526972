package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/metrics"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// FinalizeRestore writes results.json (every item's outcome, in apply
// order), restore.json and the restore's log. It runs however the restore
// ended, so a failed or canceled restore still tells what it did.
func (a *Activities) FinalizeRestore(ctx context.Context, in v1alpha1.FinalizeRestoreInput) (*v1alpha1.FinalizeRestoreResult, error) {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Spec.Name, "", in.Spec.StorageLocation)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	keys := run.Restore

	// Warnings first: the stored ones, then those the items give.
	var warnings warningList
	warningKeys, err := run.Loc.Keys(ctx, keys.AllWarnings())
	if err != nil {
		return nil, err
	}
	for _, key := range warningKeys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			var w string
			if err := json.Unmarshal(line, &w); err != nil {
				return fmt.Errorf("decode warning: %w", err)
			}
			warnings.add(w)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// A failed operation leaves its item restored: a warning names it.
	if err := writeOperations(ctx, run, &warnings); err != nil {
		return nil, err
	}
	out, err := newResultsWriter(ctx, run.Loc, keys.Results())
	if err != nil {
		return nil, err
	}
	t := newTally(in.Status.Resources)
	beat := runlog.Heartbeat(ctx)
	add := func(line []byte) error {
		var o v1alpha1.ItemOutcome
		if err := json.Unmarshal(line, &o); err != nil {
			return fmt.Errorf("decode outcome: %w", err)
		}
		t.add(o)
		if o.Result == v1alpha1.ItemSkipped && o.Reason != "" && isConflictSkip(o) {
			warnings.add(fmt.Sprintf("%s %s/%s: %s", o.Resource, o.Namespace, o.Name, o.Reason))
		}
		if t.items%200 == 0 {
			beat(t.items)
		}
		return out.add(o)
	}
	if err := writeOutcomes(ctx, run, keys, in.Status.Order, add); err != nil {
		out.abort()
		return nil, err
	}
	if err := out.close(in.Status.Skipped, warnings.listed()); err != nil {
		return nil, err
	}
	beat(t.items)

	status := in.Status
	status.Warnings = warnings.total
	t.set(&status)
	done := time.Now().UTC()
	status.CompletionTime = &done
	info := run.Info()
	meta := v1alpha1.RestoreMetadata{APIVersion: v1alpha1.MetadataAPIVersion, Kind: v1alpha1.MetadataKindRestore,
		Name: in.Spec.Name, Spec: in.Spec, Status: status, WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		EncryptionKeyID: run.Loc.KeyID()}
	run.Log.Info("Recording restore", zap.String("phase", string(status.Phase)), zap.Int("restored", status.ItemsRestored),
		zap.Int("skipped", status.ItemsSkipped), zap.Int("failed", status.ItemsFailed), zap.Int("warnings", status.Warnings))
	if err := run.JoinLogs(ctx, keys.LogsPrefix(), keys.Logs()); err != nil {
		return nil, err
	}
	if err := run.Loc.WriteJSON(ctx, keys.Metadata(), meta); err != nil {
		return nil, err
	}
	metrics.RunEnded(v1alpha1.KindRestore, string(status.Phase), status.StartTime, &done, status.ItemsRestored)
	return &v1alpha1.FinalizeRestoreResult{Warnings: status.Warnings, CompletionTime: &done, Resources: status.Resources,
		ItemsRestored: status.ItemsRestored, ItemsSkipped: status.ItemsSkipped, ItemsFailed: status.ItemsFailed}, nil
}

// writeOutcomes passes every stored item outcome to add, in apply order:
// the plan's skips, then type by type as planned, batches in key order.
func writeOutcomes(ctx context.Context, run *runlog.Run, keys location.RestoreKeys, order []string, add func([]byte) error) error {
	if err := readIfExists(ctx, run, keys.PlanSkips(), add); err != nil {
		return err
	}
	for _, gr := range order {
		batchKeys, err := run.Loc.Keys(ctx, keys.BatchResultsOf(gr))
		if err != nil {
			return err
		}
		for _, key := range batchKeys {
			if err := run.Loc.ReadLines(ctx, key, add); err != nil {
				return err
			}
		}
	}
	return nil
}

// tally counts the stored outcomes, which also hold what an apply cut
// short by a cancel or a failure did.
type tally struct {
	resources                 map[string]v1alpha1.TypeOutcome
	items                     int
	restored, skipped, failed int
}

func newTally(planned map[string]v1alpha1.TypeOutcome) *tally {
	t := &tally{resources: map[string]v1alpha1.TypeOutcome{}}
	for gr, o := range planned {
		t.resources[gr] = v1alpha1.TypeOutcome{Total: o.Total, Done: o.Done}
	}
	return t
}

func (t *tally) add(o v1alpha1.ItemOutcome) {
	t.items++
	r := t.resources[o.Resource]
	switch o.Result {
	case v1alpha1.ItemRestored:
		r.Restored++
		t.restored++
	case v1alpha1.ItemSkipped:
		r.Skipped++
		t.skipped++
	case v1alpha1.ItemFailed:
		r.Failed++
		t.failed++
	}
	t.resources[o.Resource] = r
}

// set puts the counts into a restore's status.
func (t *tally) set(status *v1alpha1.RestoreStatus) {
	status.Resources = t.resources
	status.ItemsRestored, status.ItemsSkipped, status.ItemsFailed = t.restored, t.skipped, t.failed
}

// isConflictSkip reports an item skipped because it exists and differs,
// which a user should look at (rule skips are expected and are not).
func isConflictSkip(o v1alpha1.ItemOutcome) bool {
	return o.Action == "" && (o.Reason == ReasonExistsDiffers || o.Reason == ReasonRelatedExists)
}

// writeOperations lists the restore's extension operations and how
// each ended in its operations.json, from the record of the operations
// step (none when it did not run), and warns of each that did not
// complete.
func writeOperations(ctx context.Context, run *runlog.Run, warnings *warningList) error {
	var ops []v1alpha1.Operation
	err := readIfExists(ctx, run, run.Restore.OperationsRun(), func(line []byte) error {
		var op v1alpha1.Operation
		if err := json.Unmarshal(line, &op); err != nil {
			return fmt.Errorf("%s: %w", run.Restore.OperationsRun(), err)
		}
		if op.Error != "" && op.Item != nil {
			warnings.add(fmt.Sprintf("%s: operation %s: %s", op.Item, op.ID, op.Error))
		}
		ops = append(ops, op)
		return nil
	})
	if err != nil || len(ops) == 0 {
		return err
	}
	return run.Loc.WriteJSON(ctx, run.Restore.Operations(), v1alpha1.OperationsFile{Operations: ops})
}

func readIfExists(ctx context.Context, run *runlog.Run, key string, fn func([]byte) error) error {
	err := run.Loc.ReadLines(ctx, key, fn)
	if errors.Is(err, location.ErrNotFound) {
		return nil
	}
	return err
}

// CleanupRestoreWork removes a restore's intermediate state once its
// results and log are stored.
func (a *Activities) CleanupRestoreWork(ctx context.Context, in v1alpha1.RestoreStepInput) error {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, "", in.Location)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	// Not run.End(): its log chunk would land in the prefix removed here.
	defer func() { _ = run.Loc.Close() }()
	if _, err := run.Loc.ReadAll(ctx, run.Restore.Logs()); errors.Is(err, location.ErrNotFound) {
		if err := run.JoinLogs(ctx, run.Restore.LogsPrefix(), run.Restore.Logs()); err != nil {
			return err
		}
	}
	for _, prefix := range []string{run.Restore.Work(), run.Restore.LogsPrefix()} {
		if err := run.Loc.DeletePrefix(ctx, prefix, runlog.Heartbeat(ctx)); err != nil {
			return err
		}
	}
	run.Log.Info("Removed intermediate state")
	return nil
}

// maxListedWarnings bounds the warnings results.json lists: a restore into
// a cluster that holds its objects already gives one per object.
const maxListedWarnings = 1000

// warningList keeps the first maxListedWarnings warnings and counts all.
type warningList struct {
	first []string
	total int
}

func (l *warningList) add(w string) {
	l.total++
	if len(l.first) < maxListedWarnings {
		l.first = append(l.first, w)
	}
}

// listed is the first warnings, and a last line counting those left out.
func (l *warningList) listed() []string {
	if more := l.total - len(l.first); more > 0 {
		return append(l.first, fmt.Sprintf("%d more warnings are not listed; each item's outcome is in the items above", more))
	}
	return l.first
}
