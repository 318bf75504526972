package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/cairn-backup/cairn/activities/hooks/hookspec"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/internal/tick"
)

// restoreHookPods is how many restored pods run their hooks at once: a
// hook may wait minutes for its container.
const restoreHookPods = 8

// readyPollInterval is how often a hook waiting for its container reads
// the pod.
const readyPollInterval = time.Second

// RunRestoreHooks runs the post-restore exec hooks of the pods the
// restore created, each once its container runs (or is ready), several
// pods at once. The results so far are its heartbeat: a retry skips the
// pods that are done and runs the others' hooks again.
func (a *Activities) RunRestoreHooks(ctx context.Context, in v1alpha1.RestoreHooksInput) (*v1alpha1.RestoreHooksResult, error) {
	a, err := a.actingAs(in.ActingAs)
	if err != nil {
		return nil, err
	}
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	done := map[string][]v1alpha1.HookResult{}
	var prior []v1alpha1.HookResult
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &prior) == nil {
		for _, r := range prior {
			done[r.Pod] = append(done[r.Pod], r)
		}
	}
	created, err := createdPods(ctx, run)
	if err != nil {
		return nil, err
	}
	pods, err := a.restoredPodsWithHooks(ctx, in, created)
	if err != nil {
		return nil, err
	}
	run.Log.Info("Running restore hooks", zap.Int("pods", len(pods)), zap.Int("done before", len(done)))

	var mu sync.Mutex
	results := append([]v1alpha1.HookResult{}, prior...)
	stop := tick.Every(a.heartbeatInterval(ctx), func() {
		mu.Lock()
		defer mu.Unlock()
		activity.RecordHeartbeat(ctx, results)
	})
	defer stop()
	pool := new(errgroup.Group)
	pool.SetLimit(restoreHookPods)
	for _, p := range pods {
		if _, ok := done[p.pod.Namespace+"/"+p.pod.Name]; ok {
			continue
		}
		pool.Go(func() error {
			rs, err := a.runRestorePodHooks(ctx, p.pod, p.hooks)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			results = append(results, rs...)
			return nil
		})
	}
	firstErr := pool.Wait()
	stop()
	if firstErr != nil {
		return nil, firstErr
	}
	sort.SliceStable(results, func(i, j int) bool { return results[i].Pod < results[j].Pod })
	var warnings bytes.Buffer
	enc := json.NewEncoder(&warnings)
	for _, r := range results {
		if r.Failed() {
			run.Log.Warn("Restore hook failed", zap.String("pod", r.Pod), zap.String("reason", r.Error), zap.String("stderr", r.Stderr))
			_ = enc.Encode(fmt.Sprintf("post-restore hook of pod %s (%s, onError %s) failed: %s", r.Pod, r.Source, r.OnError, r.Error))
		}
	}
	// The restore's results list them with its other warnings.
	if err := run.Loc.WriteAll(ctx, run.Restore.Warnings("hooks"), warnings.Bytes()); err != nil {
		return nil, err
	}
	return &v1alpha1.RestoreHooksResult{Results: results}, nil
}

type podWithHooks struct {
	pod   *corev1.Pod
	hooks []v1alpha1.RestoreExecHook
}

// restoredPodsWithHooks lists the pods the restore created that have
// post-restore exec hooks.
func (a *Activities) restoredPodsWithHooks(ctx context.Context, in v1alpha1.RestoreHooksInput, created map[string]bool) ([]podWithHooks, error) {
	source := map[string]string{} // restored namespace -> backed-up one
	for from, to := range in.NamespaceMapping {
		source[to] = from
	}
	namespaces := map[string]bool{}
	for key := range created {
		ns, _, _ := strings.Cut(key, "/")
		namespaces[ns] = true
	}
	var out []podWithHooks
	// Listed in the namespaces the restore created pods in, so a caller
	// bound only there can run its hooks.
	for _, listed := range slices.Sorted(maps.Keys(namespaces)) {
		p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return a.Kube.CoreV1().Pods(listed).List(ctx, opts)
		})
		err := p.EachListItem(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelRestore + "=" + in.Restore}, func(obj runtime.Object) error {
			pod := obj.(*corev1.Pod)
			if !created[pod.Namespace+"/"+pod.Name] {
				return nil // a label is no proof that this run created it
			}
			ns := pod.Namespace
			if s, ok := source[ns]; ok {
				ns = s
			}
			if hs := hookspec.RestoreExecHooks(pod, ns, in.Hooks); len(hs) > 0 {
				for i := range hs {
					hs[i].Timeout, _ = a.bound(hs[i].Timeout)
					hs[i].WaitTimeout, _ = a.bound(hs[i].WaitTimeout)
				}
				out = append(out, podWithHooks{pod: pod.DeepCopy(), hooks: hs})
			}
			return nil
		})
		if apierrors.IsForbidden(err) {
			// No retry gives the caller that right.
			msg := fmt.Sprintf("post-restore hooks: may not list the restored pods in %s: %v", listed, err)
			return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeForbidden, nil)
		}
		if err != nil {
			return nil, fmt.Errorf("list restored pods in %s: %w", listed, err)
		}
	}
	if len(out) > v1alpha1.MaxHookedPods {
		err := fmt.Errorf("%d restored pods have hooks, more than %d", len(out), v1alpha1.MaxHookedPods)
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
	}
	return out, nil
}

// runRestorePodHooks runs one pod's hooks in order, each once its
// container is up. The error is what a retry may fix.
func (a *Activities) runRestorePodHooks(ctx context.Context, pod *corev1.Pod, hs []v1alpha1.RestoreExecHook) ([]v1alpha1.HookResult, error) {
	in := v1alpha1.RunHooksInput{Namespace: pod.Namespace, Pod: pod.Name, Phase: v1alpha1.HookPostRestore}
	attempt := activity.GetInfo(ctx).Attempt
	var out []v1alpha1.HookResult
	for _, h := range hs {
		r := v1alpha1.HookResult{Pod: pod.Namespace + "/" + pod.Name, Phase: in.Phase, Source: h.Source, Container: h.Container,
			Command: h.Command, OnError: h.OnError, ExitCode: -1, Attempt: attempt}
		if h.Problem == "" {
			why, err := a.waitContainer(ctx, pod, h)
			switch {
			case err != nil:
				return nil, err
			case why != "":
				r.Error = why
			default:
				if r, err = a.runHook(ctx, in, h.PodHook, func() {}); err != nil {
					return nil, err
				}
				r.Attempt = attempt
			}
		} else {
			r.Error = h.Problem
		}
		out = append(out, r)
	}
	return out, nil
}

// waitContainer waits until the hook's container runs, or is ready when
// the hook asks, for at most its wait timeout. It returns why the hook
// cannot run ("" when it can).
func (a *Activities) waitContainer(ctx context.Context, pod *corev1.Pod, h v1alpha1.RestoreExecHook) (string, error) {
	want := "running"
	if h.WaitForReady {
		want = "ready"
	}
	wctx, cancel := context.WithTimeout(ctx, h.WaitTimeout)
	defer cancel()
	last := "not seen yet"
	for {
		p, err := a.Kube.CoreV1().Pods(pod.Namespace).Get(wctx, pod.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("pod %s/%s no longer exists", pod.Namespace, pod.Name), nil
		case err == nil:
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				return fmt.Sprintf("pod %s/%s ended (%s) before its hook ran", pod.Namespace, pod.Name, p.Status.Phase), nil
			}
			for _, s := range p.Status.ContainerStatuses {
				if s.Name != h.Container {
					continue
				}
				if s.State.Running != nil && (!h.WaitForReady || s.Ready) {
					return "", nil
				}
				last = containerState(s)
			}
		}
		if clock.Sleep(wctx, readyPollInterval) != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return fmt.Sprintf("container %s of pod %s/%s was not %s within its wait timeout %s (last: %s)",
				h.Container, pod.Namespace, pod.Name, want, h.WaitTimeout, last), nil
		}
	}
}

func containerState(s corev1.ContainerStatus) string {
	switch {
	case s.State.Waiting != nil:
		return "waiting: " + s.State.Waiting.Reason
	case s.State.Terminated != nil:
		return "terminated: " + s.State.Terminated.Reason
	case s.State.Running != nil && !s.Ready:
		return "running, not ready"
	}
	return "unknown"
}

// createdPods are the pods ("namespace/name") this restore created, from
// the outcomes its apply step stored: hooks run in those and no others.
func createdPods(ctx context.Context, run *runlog.Run) (map[string]bool, error) {
	keys, err := run.Loc.Keys(ctx, run.Restore.BatchResultsOf("pods"))
	if err != nil {
		return nil, fmt.Errorf("list the restore's pod outcomes: %w", err)
	}
	created := map[string]bool{}
	for _, key := range keys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			var o v1alpha1.ItemOutcome
			if err := json.Unmarshal(line, &o); err != nil {
				return fmt.Errorf("decode %s: %w", key, err)
			}
			if o.Result == v1alpha1.ItemRestored && o.Action == v1alpha1.ActionCreated {
				created[o.Namespace+"/"+o.Name] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return created, nil
}
