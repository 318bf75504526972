package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/internal/tick"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// operationsResultKey is where RunOperations' warnings go, beside the
// types' results.
const operationsResultKey = "_operations"

// maxOperationsInFlight bounds the operations one step waits on at once;
// an extension's worker bounds how many of them it runs.
const maxOperationsInFlight = 64

// maxOperationsShown bounds the running operations a heartbeat names.
const maxOperationsShown = 5

// operation is one recorded operation and how it ended.
type operation struct {
	rec extcall.OperationRecord
	op  v1alpha1.Operation
}

// RunOperations runs the operations extensions started during collection,
// each as its own ExtensionOperation workflow, waits for them all, then
// reads again the items the completed ones update and stores them in
// place of the collected copies. A retried attempt finds the workflows
// the one before started. A canceled backup cancels the operations still
// running.
func (a *Activities) RunOperations(ctx context.Context, in v1alpha1.RunOperationsInput) (*v1alpha1.RunOperationsResult, error) {
	run, plan, err := StartWithPlan(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, err
	}
	defer run.End()
	ops, err := readOperations(ctx, run, plan.Extensions, in)
	if err != nil {
		return nil, err
	}
	if err := a.runAll(ctx, run, in, registeredByName(plan.Extensions), ops); err != nil {
		return nil, err
	}
	updated := refSet{}
	res := &v1alpha1.RunOperationsResult{Operations: v1alpha1.OperationCounts{Total: len(ops)}}
	for _, o := range ops {
		countOperation(&res.Operations, o.op.Phase)
		switch {
		case o.op.Phase == v1alpha1.OperationCompleted:
			for _, r := range o.rec.ItemsToUpdate {
				updated.add(r)
			}
		case o.op.Phase == v1alpha1.OperationFailed && res.FirstError == "":
			res.FirstError = o.op.Error
		}
	}
	if err := deleteUpdatedParts(ctx, run); err != nil {
		return nil, err
	}
	stored, warnings, err := a.storeObjects(ctx, run, plan, objectsToStore{
		refs: updated, actingAs: in.Options.ActingAs, unreachable: in.Options.ClusterUnreachableTimeout.Duration,
		asker: "operations", part: run.Keys.UpdatedPart,
	})
	if err != nil {
		return nil, err
	}
	res.Updated, res.Warnings = stored, len(warnings)
	if err := writeOperationsRun(ctx, run, ops); err != nil {
		return nil, err
	}
	if err := run.Loc.WriteJSON(ctx, run.Keys.TypeResult(operationsResultKey), TypeResult{Warnings: warnings}); err != nil {
		return nil, err
	}
	run.Log.Info("Operations ended", zap.Int("completed", res.Operations.Completed), zap.Int("failed", res.Operations.Failed),
		zap.Int("canceled", res.Operations.Canceled), zap.Int("itemsUpdated", sum(stored)))
	return res, nil
}

// CancelOperations cancels every operation of a backup that ended early;
// those that ended are left alone. It is safe to run again, and
// heartbeats as it goes.
func (a *Activities) CancelOperations(ctx context.Context, in v1alpha1.CancelOperationsInput) error {
	if a.Operations == nil {
		return nil
	}
	run, plan, err := StartWithPlan(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return err
	}
	defer run.End()
	ops, err := readOperations(ctx, run, plan.Extensions, v1alpha1.RunOperationsInput{Backup: in.Backup})
	if err != nil {
		return err
	}
	for i, o := range ops {
		if o.op.WorkflowID == "" {
			continue
		}
		if err := a.Operations.Cancel(ctx, o.op.WorkflowID); err != nil {
			return err
		}
		// One request per operation, however many there are.
		activity.RecordHeartbeat(ctx, i)
	}
	return nil
}

// readOperations reads the operations the collect steps recorded, in
// part order. An operation whose extension already started one of the
// same ID in this backup fails without running.
func readOperations(ctx context.Context, run *runlog.Run, exts []v1alpha1.Extension, in v1alpha1.RunOperationsInput) ([]*operation, error) {
	keys, err := run.Loc.Keys(ctx, run.Keys.AllExtensionOperations())
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	registered := registeredByName(exts)
	var ops []*operation
	first := map[string]extension.ObjectRef{}
	for _, key := range keys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			var rec extcall.OperationRecord
			if err := json.Unmarshal(line, &rec); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			o := &operation{rec: rec, op: v1alpha1.Operation{ID: rec.ID, Kind: v1alpha1.OperationKindExtension, Extension: rec.Extension,
				Item:  &v1alpha1.ItemRef{Resource: groupResource(rec.Item), Namespace: rec.Item.Namespace, Name: rec.Item.Name},
				Phase: v1alpha1.OperationNew, Timeout: in.Timeout,
				WorkflowID: v1alpha1.ExtensionOperationWorkflowID(in.Backup, rec.Extension, rec.ID)}}
			dupKey := rec.Extension + "\x00" + rec.ID
			if prev, dup := first[dupKey]; dup {
				o.op.Phase, o.op.Error = v1alpha1.OperationFailed, fmt.Sprintf("extension %s: operation id %q was already started for %s %s",
					rec.Extension, rec.ID, groupResource(prev), refKey(prev.Namespace, prev.Name))
				o.op.WorkflowID = ""
			} else if _, ok := registered[rec.Extension]; !ok {
				// Only a work area written by something else holds one: a
				// retry would read the same.
				msg := fmt.Sprintf("%s: operation of extension %s, which the backup's plan does not register", key, rec.Extension)
				return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeInvalidSpec, nil)
			}
			first[dupKey] = rec.Item
			ops = append(ops, o)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return ops, nil
}

func registeredByName(exts []v1alpha1.Extension) map[string]v1alpha1.Extension {
	out := make(map[string]v1alpha1.Extension, len(exts))
	for _, e := range exts {
		out[e.Name] = e
	}
	return out
}

// runAll runs every operation not failed already, at most
// maxOperationsInFlight at once, heartbeating the counts meanwhile.
func (a *Activities) runAll(ctx context.Context, run *runlog.Run, in v1alpha1.RunOperationsInput, plan map[string]v1alpha1.Extension, ops []*operation) error {
	if a.Operations == nil && len(ops) > 0 {
		return temporal.NewNonRetryableApplicationError("this worker runs no extension operations", v1alpha1.ErrTypeExtension, nil)
	}
	var mu sync.Mutex
	progress := v1alpha1.OperationsProgress{}
	progress.Total = len(ops)
	running := map[*operation]time.Time{}
	beat := func() {
		mu.Lock()
		defer mu.Unlock()
		progress.Waiting = progress.Waiting[:0]
		for o, since := range running {
			if len(progress.Waiting) == maxOperationsShown {
				break
			}
			ext := plan[o.rec.Extension]
			progress.Waiting = append(progress.Waiting, v1alpha1.ExtensionWait{Extension: ext.Name, TaskQueue: ext.TaskQueue,
				Since: metav1.NewTime(since), Operation: o.rec.ID})
		}
		activity.RecordHeartbeat(ctx, progress)
	}
	stop := tick.Every(a.waitBeat(ctx), beat)
	defer stop()

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxOperationsInFlight)
	for _, o := range ops {
		if o.op.Phase.Done() {
			mu.Lock()
			countOperation(&progress.OperationCounts, o.op.Phase)
			mu.Unlock()
			continue
		}
		ext := plan[o.rec.Extension]
		g.Go(func() error {
			mu.Lock()
			now := time.Now().UTC()
			running[o] = now
			o.op.Started, o.op.Phase = &now, v1alpha1.OperationInProgress
			mu.Unlock()
			err := a.runOne(gctx, in, ext, o)
			mu.Lock()
			defer mu.Unlock()
			delete(running, o)
			if err == nil {
				countOperation(&progress.OperationCounts, o.op.Phase)
			}
			return err
		})
	}
	err := g.Wait()
	if ctx.Err() != nil {
		// The backup was canceled (or this attempt timed out): what runs
		// is asked to stop, on a context of its own as this one is done.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, o := range ops {
			if o.op.WorkflowID != "" {
				if cerr := a.Operations.Cancel(cctx, o.op.WorkflowID); cerr != nil {
					run.Log.Warn("Operation not canceled", zap.String("operation", o.rec.ID), zap.Error(cerr))
				}
			}
		}
		return ctx.Err()
	}
	return err
}

// runOne runs one operation and records how it ended. Its error is for
// what the step retries (Temporal out of reach); an operation that
// failed, was canceled or timed out is recorded as such.
func (a *Activities) runOne(ctx context.Context, in v1alpha1.RunOperationsInput, ext v1alpha1.Extension, o *operation) error {
	req, err := json.Marshal(extension.BackupOperationRequest{Backup: in.Backup, Extension: ext.Name, OperationID: o.rec.ID,
		Resource: o.rec.Resource, Item: o.rec.Item, Data: o.rec.Data})
	if err != nil {
		return err
	}
	input := v1alpha1.ExtensionOperationInput{Backup: in.Backup, Extension: ext.Name, TaskQueue: ext.TaskQueue,
		Timeout: metav1.Duration{Duration: in.Timeout}, HeartbeatTimeout: metav1.Duration{Duration: in.Options.HeartbeatTimeout.Duration},
		Request: req}
	result, err := a.Operations.Run(ctx, o.op.WorkflowID, input)
	now := time.Now().UTC()
	o.op.Updated = &now
	var (
		appErr     *temporal.ApplicationError
		canceled   *temporal.CanceledError
		terminated *temporal.TerminatedError
		timedOut   *temporal.TimeoutError
	)
	switch {
	case err == nil:
		var r extension.BackupOperationResult
		o.op.Phase = v1alpha1.OperationCompleted
		if json.Unmarshal(result, &r) == nil {
			o.op.Progress = truncate(r.Description, 1024)
		}
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &canceled):
		o.op.Phase, o.op.Error = v1alpha1.OperationCanceled, fmt.Sprintf("extension %s: operation canceled", ext.Name)
	case errors.As(err, &appErr):
		o.op.Phase, o.op.Error = v1alpha1.OperationFailed, fmt.Sprintf("extension %s: %s", ext.Name, truncate(appErr.Message(), 4096))
	case errors.As(err, &terminated), errors.As(err, &timedOut):
		o.op.Phase, o.op.Error = v1alpha1.OperationFailed, fmt.Sprintf("extension %s: the operation's workflow ended without a result: %v", ext.Name, err)
	default:
		return err
	}
	return nil
}

func countOperation(c *v1alpha1.OperationCounts, p v1alpha1.OperationPhase) {
	switch p {
	case v1alpha1.OperationCompleted:
		c.Completed++
	case v1alpha1.OperationFailed:
		c.Failed++
	case v1alpha1.OperationCanceled:
		c.Canceled++
	}
}

// writeOperationsRun records how each operation ended, for finalize.
func writeOperationsRun(ctx context.Context, run *runlog.Run, ops []*operation) error {
	var buf []byte
	for _, o := range ops {
		line, err := json.Marshal(o.op)
		if err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
	}
	return run.Loc.WriteAll(ctx, run.Keys.OperationsRun(), buf)
}

// deleteUpdatedParts deletes the updated parts an attempt before this
// one wrote.
func deleteUpdatedParts(ctx context.Context, run *runlog.Run) error {
	keys, err := run.Loc.Keys(ctx, run.Keys.AllParts())
	if err != nil {
		return err
	}
	for _, key := range keys {
		if run.Keys.IsUpdatedPart(key) {
			if err := run.Loc.Delete(ctx, key); err != nil {
				return err
			}
		}
	}
	return nil
}

func groupResource(r extension.ObjectRef) string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
