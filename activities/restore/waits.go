package restore

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/tick"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// readyPoll is how often a waited-for object is read again.
const readyPoll = time.Second

// itemWait is what an item waits for before it is created, as an
// extension's answer asked.
type itemWait struct {
	extension v1alpha1.Extension
	refs      []extension.ObjectRef
	timeout   time.Duration
}

// readiness reads the objects items wait for, as the restore's identity,
// and judges them by their status (kstatus).
type readiness struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	every  time.Duration
	board  *waitBoard
}

func newReadiness(c *kube.Clients, board *waitBoard) *readiness {
	return &readiness{dyn: c.Dynamic, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Discovery)),
		every: readyPoll, board: board}
}

// waitBoard holds what an apply step waits on (extensions' answers,
// objects to be ready), for its heartbeat: what describe shows.
type waitBoard struct {
	mu      sync.Mutex
	waiting map[any]v1alpha1.ExtensionWait
}

func newWaitBoard() *waitBoard { return &waitBoard{waiting: map[any]v1alpha1.ExtensionWait{}} }

func (b *waitBoard) put(key any, w v1alpha1.ExtensionWait) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting[key] = w
}

func (b *waitBoard) remove(key any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiting, key)
}

// shown is some of the waits under way, oldest first.
func (b *waitBoard) shown() []v1alpha1.ExtensionWait {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]v1alpha1.ExtensionWait, 0, len(b.waiting))
	for _, w := range b.waiting {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(&out[j].Since) })
	return out[:min(len(out), maxWaitsShown)]
}

// await waits until every object w names is ready, heartbeating with beat
// meanwhile. It returns why the item cannot be created ("" when all are
// ready), or an error for what a retry mends (the API server out of
// reach).
func (r *readiness) await(ctx context.Context, w *itemWait, beat func()) (string, error) {
	stop := tick.Every(extcall.BeatEvery(ctx), beat)
	defer stop()
	defer r.board.remove(w)
	since := time.Now().UTC()
	wctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	who := "extension " + w.extension.Name + ": "
	for _, ref := range w.refs {
		r.board.put(w, v1alpha1.ExtensionWait{Extension: w.extension.Name, TaskQueue: w.extension.TaskQueue,
			Since: metav1.NewTime(since), Ready: extcall.RefString(ref)})
		var why, last string
		err := wait.PollUntilContextCancel(wctx, r.every, true, func(ctx context.Context) (bool, error) {
			ready, failed, msg, err := r.state(ctx, ref)
			switch {
			case err != nil:
				return false, err
			case failed != "":
				why = failed
				return true, nil
			}
			last = msg
			return ready, nil
		})
		switch {
		case why != "":
			return who + why, nil
		case err != nil && ctx.Err() == nil && wctx.Err() != nil:
			return fmt.Sprintf("%swaited %s for %s to be ready; %s", who, w.timeout, extcall.RefString(ref), last), nil
		case err != nil:
			return "", err
		}
	}
	return "", nil
}

// state reads one object: ready, or the reason it cannot become ready
// (failed), or how far it is.
func (r *readiness) state(ctx context.Context, ref extension.ObjectRef) (ready bool, failed, msg string, err error) {
	obj, unreadable, err := r.read(ctx, ref)
	switch {
	case err != nil:
		return false, "", "", err
	case unreadable != "":
		return false, extcall.RefString(ref) + ": " + unreadable, "", nil
	case obj == nil:
		return false, "", "it does not exist", nil
	}
	res, err := status.Compute(obj)
	if err != nil {
		return false, "", err.Error(), nil
	}
	switch res.Status {
	case status.CurrentStatus:
		return true, "", "", nil
	case status.FailedStatus:
		return false, fmt.Sprintf("%s failed: %s", extcall.RefString(ref), res.Message), "", nil
	}
	return false, "", fmt.Sprintf("it is %s: %s", res.Status, res.Message), nil
}

// read reads one object as the restore's identity: nil when it does not
// exist; unreadable says why it cannot be read (a type the cluster does
// not serve, a read the identity may not make). An error is what a retry
// mends.
func (r *readiness) read(ctx context.Context, ref extension.ObjectRef) (obj *unstructured.Unstructured, unreadable string, err error) {
	gvr, err := r.mapper.ResourceFor(schema.GroupVersionResource{Group: ref.Group, Resource: ref.Resource})
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, "the cluster serves no such resource", nil
		}
		return nil, "", fmt.Errorf("resolve %s: %w", extcall.RefString(ref), err)
	}
	obj, err = r.dyn.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", nil
	case apierrors.IsForbidden(err):
		return nil, "the restore's identity may not read it", nil
	case err != nil:
		return nil, "", fmt.Errorf("read %s: %w", extcall.RefString(ref), err)
	}
	return obj, "", nil
}

// maxWaitsShown bounds the waits a heartbeat names.
const maxWaitsShown = 5

// exists says whether an object exists, read as the restore's identity;
// unreadable says why that cannot be told.
func (r *readiness) exists(ctx context.Context, ref extension.ObjectRef) (ok bool, unreadable string, err error) {
	obj, unreadable, err := r.read(ctx, ref)
	return obj != nil, unreadable, err
}
