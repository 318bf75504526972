package extcall

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
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tick"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// maxOperationsInFlight bounds the operations one step waits on at once;
// an extension's worker bounds how many of them it runs.
const maxOperationsInFlight = 64

// maxOperationsShown bounds the running operations a heartbeat names.
const maxOperationsShown = 5

// Pending is one recorded operation and how it ended.
type Pending struct {
	Rec OperationRecord
	Op  v1alpha1.Operation
}

// OperationSet runs the operations extensions started for one backup or
// restore, each as its own ExtensionOperation workflow.
type OperationSet struct {
	Operator   Operator
	Registered map[string]v1alpha1.Extension
	Log        *zap.Logger
	// BeatEvery is how often the step heartbeats its OperationsProgress.
	BeatEvery time.Duration
	// Input is the workflow input of one operation.
	Input func(ext v1alpha1.Extension, p *Pending) (v1alpha1.ExtensionOperationInput, error)
}

// Registered maps extensions by name.
func Registered(exts []v1alpha1.Extension) map[string]v1alpha1.Extension {
	out := make(map[string]v1alpha1.Extension, len(exts))
	for _, e := range exts {
		out[e.Name] = e
	}
	return out
}

// ReadOperations reads the operations recorded under prefix, in key
// order; workflowID names each one's workflow. An operation whose
// extension already started one of the same ID in this run fails without
// running; one of an extension the run's plan does not register is an
// error a retry cannot mend.
func ReadOperations(ctx context.Context, loc *location.Location, prefix string, exts []v1alpha1.Extension, timeout time.Duration,
	workflowID func(rec OperationRecord) string) ([]*Pending, error) {
	keys, err := loc.Keys(ctx, prefix)
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	registered := Registered(exts)
	var ops []*Pending
	first := map[string]extension.ObjectRef{}
	for _, key := range keys {
		err := loc.ReadLines(ctx, key, func(line []byte) error {
			var rec OperationRecord
			if err := json.Unmarshal(line, &rec); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			p := &Pending{Rec: rec, Op: v1alpha1.Operation{ID: rec.ID, Kind: v1alpha1.OperationKindExtension, Extension: rec.Extension,
				Item:  &v1alpha1.ItemRef{Resource: GroupResource(rec.Item), Namespace: rec.Item.Namespace, Name: rec.Item.Name},
				Phase: v1alpha1.OperationNew, Timeout: timeout, WorkflowID: workflowID(rec)}}
			dupKey := rec.Extension + "\x00" + rec.ID
			if prev, dup := first[dupKey]; dup {
				p.Op.Phase, p.Op.Error = v1alpha1.OperationFailed, fmt.Sprintf("extension %s: operation id %q was already started for %s",
					rec.Extension, rec.ID, RefString(prev))
				p.Op.WorkflowID = ""
			} else if _, ok := registered[rec.Extension]; !ok {
				// Only a work area written by something else holds one: a
				// retry would read the same.
				msg := fmt.Sprintf("%s: operation of extension %s, which the run's plan does not register", key, rec.Extension)
				return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeInvalidSpec, nil)
			}
			first[dupKey] = rec.Item
			ops = append(ops, p)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return ops, nil
}

// RunAll runs every operation not failed already, at most
// maxOperationsInFlight at once, heartbeating the counts meanwhile. A
// canceled step cancels the operations it waited on.
func (s OperationSet) RunAll(ctx context.Context, ops []*Pending) error {
	if s.Operator == nil && len(ops) > 0 {
		return temporal.NewNonRetryableApplicationError("this worker runs no extension operations", v1alpha1.ErrTypeExtension, nil)
	}
	var mu sync.Mutex
	progress := v1alpha1.OperationsProgress{}
	progress.Total = len(ops)
	running := map[*Pending]time.Time{}
	beat := func() {
		mu.Lock()
		defer mu.Unlock()
		progress.Waiting = progress.Waiting[:0]
		for p, since := range running {
			if len(progress.Waiting) == maxOperationsShown {
				break
			}
			ext := s.Registered[p.Rec.Extension]
			progress.Waiting = append(progress.Waiting, v1alpha1.ExtensionWait{Extension: ext.Name, TaskQueue: ext.TaskQueue,
				Since: metav1.NewTime(since), Operation: p.Rec.ID})
		}
		activity.RecordHeartbeat(ctx, progress)
	}
	stop := tick.Every(s.BeatEvery, beat)
	defer stop()

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxOperationsInFlight)
	for _, p := range ops {
		if p.Op.Phase.Done() {
			mu.Lock()
			countOperation(&progress.OperationCounts, p.Op.Phase)
			mu.Unlock()
			continue
		}
		ext := s.Registered[p.Rec.Extension]
		g.Go(func() error {
			mu.Lock()
			now := time.Now().UTC()
			running[p] = now
			p.Op.Started, p.Op.Phase = &now, v1alpha1.OperationInProgress
			mu.Unlock()
			err := s.runOne(gctx, ext, p)
			mu.Lock()
			defer mu.Unlock()
			delete(running, p)
			if err == nil {
				countOperation(&progress.OperationCounts, p.Op.Phase)
			}
			return err
		})
	}
	err := g.Wait()
	if ctx.Err() != nil {
		// The run was canceled (or this attempt timed out): what runs is
		// asked to stop, on a context of its own as this one is done.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, p := range ops {
			if p.Op.WorkflowID != "" {
				if cerr := s.Operator.Cancel(cctx, p.Op.WorkflowID); cerr != nil {
					s.Log.Warn("Operation not canceled", zap.String("operation", p.Rec.ID), zap.Error(cerr))
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
func (s OperationSet) runOne(ctx context.Context, ext v1alpha1.Extension, p *Pending) error {
	input, err := s.Input(ext, p)
	if err != nil {
		return err
	}
	result, err := s.Operator.Run(ctx, p.Op.WorkflowID, input)
	now := time.Now().UTC()
	p.Op.Updated = &now
	var (
		appErr     *temporal.ApplicationError
		canceled   *temporal.CanceledError
		terminated *temporal.TerminatedError
		timedOut   *temporal.TimeoutError
	)
	switch {
	case err == nil:
		// BackupOperationResult and RestoreOperationResult alike.
		var r extension.BackupOperationResult
		p.Op.Phase = v1alpha1.OperationCompleted
		if json.Unmarshal(result, &r) == nil {
			p.Op.Progress = truncate(r.Description, 1024)
		}
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &canceled):
		p.Op.Phase, p.Op.Error = v1alpha1.OperationCanceled, fmt.Sprintf("extension %s: operation canceled", ext.Name)
	case errors.As(err, &appErr):
		p.Op.Phase, p.Op.Error = v1alpha1.OperationFailed, fmt.Sprintf("extension %s: %s", ext.Name, truncate(appErr.Message(), 4096))
	case errors.As(err, &terminated), errors.As(err, &timedOut):
		p.Op.Phase, p.Op.Error = v1alpha1.OperationFailed, fmt.Sprintf("extension %s: the operation's workflow ended without a result: %v", ext.Name, err)
	default:
		return err
	}
	return nil
}

// CancelAll asks every operation that has a workflow to stop; those that
// ended are left alone. It heartbeats as it goes, one request per
// operation however many there are.
func CancelAll(ctx context.Context, operator Operator, ops []*Pending) error {
	for i, p := range ops {
		if p.Op.WorkflowID == "" {
			continue
		}
		if err := operator.Cancel(ctx, p.Op.WorkflowID); err != nil {
			return err
		}
		activity.RecordHeartbeat(ctx, i)
	}
	return nil
}

// Outcome counts how the operations ended and gives the first failure's
// message.
func Outcome(ops []*Pending) (counts v1alpha1.OperationCounts, firstError string) {
	counts.Total = len(ops)
	for _, p := range ops {
		countOperation(&counts, p.Op.Phase)
		if p.Op.Phase == v1alpha1.OperationFailed && firstError == "" {
			firstError = p.Op.Error
		}
	}
	return counts, firstError
}

// WriteOperationsRun records how each operation ended, one JSON line
// each, for the run's finalize step.
func WriteOperationsRun(ctx context.Context, loc *location.Location, key string, ops []*Pending) error {
	var buf []byte
	for _, p := range ops {
		line, err := json.Marshal(p.Op)
		if err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
	}
	return loc.WriteAll(ctx, key, buf)
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

// HeartbeatOf is a run's heartbeat timeout for its operations: zero (the
// operation's default) when unset.
func HeartbeatOf(d *metav1.Duration) metav1.Duration {
	if d == nil {
		return metav1.Duration{}
	}
	return *d
}

// BeatEvery is how often a step heartbeats while it waits on extensions
// (calls, operations, objects to be ready): a third of its heartbeat
// timeout.
func BeatEvery(ctx context.Context) time.Duration {
	if d := activity.GetInfo(ctx).HeartbeatTimeout / 3; d > 0 {
		return d
	}
	return 10 * time.Second
}

// GroupResource is a reference's type as "resource.group".
func GroupResource(r extension.ObjectRef) string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// RefString names a referenced object as kubectl does: its type, then
// namespace/name.
func RefString(r extension.ObjectRef) string {
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + name
	}
	return GroupResource(r) + " " + name
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
