package controller

import (
	"context"
	"sync"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// runWaiter waits for runs to close, one goroutine per run in progress,
// each blocked in Temporal's long poll, and asks for the resource that
// waits on it to be reconciled again when it does. Reconciles never
// block on a run, and nothing polls.
type runWaiter struct {
	ctx    context.Context
	wait   func(ctx context.Context, workflowID, runID string) error
	events chan event.GenericEvent
	log    *zap.Logger

	mu      sync.Mutex
	waiting map[runKey]bool
	closed  map[runKey]error
}

type runKey struct {
	object     types.NamespacedName
	workflowID string
	runID      string
}

func newRunWaiter(ctx context.Context, wait func(ctx context.Context, workflowID, runID string) error, log *zap.Logger) *runWaiter {
	return &runWaiter{ctx: ctx, wait: wait, events: make(chan event.GenericEvent, 64), log: log,
		waiting: map[runKey]bool{}, closed: map[runKey]error{}}
}

// closedRun reports whether the run obj waits on has closed since the
// last call, and with what error; when it has not, it makes sure a
// goroutine waits for it.
func (w *runWaiter) closedRun(obj client.Object, workflowID, runID string) (closed bool, err error) {
	key := runKey{client.ObjectKeyFromObject(obj), workflowID, runID}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err, ok := w.closed[key]; ok {
		delete(w.closed, key)
		return true, err
	}
	if !w.waiting[key] {
		w.waiting[key] = true
		go w.waitFor(key, obj.DeepCopyObject().(client.Object))
	}
	return false, nil
}

func (w *runWaiter) waitFor(key runKey, obj client.Object) {
	err := w.wait(w.ctx, key.workflowID, key.runID)
	if w.ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	delete(w.waiting, key)
	w.closed[key] = err
	w.mu.Unlock()
	w.log.Debug("Run closed", zap.String("workflowID", key.workflowID), zap.Stringer("resource", key.object))
	select {
	case w.events <- event.GenericEvent{Object: obj}:
	case <-w.ctx.Done():
	}
}
