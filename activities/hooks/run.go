package hooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/internal/tick"
)

// RunPodHooks runs the hooks of one phase of one pod, in order, and
// returns what each did. It heartbeats the results so far: a retry after
// a worker died goes on from the hook that was running, which runs again
// (hooks run at least once). A pre hook that fails with onError Fail
// stops the pod's other pre hooks; post hooks all run, whatever fails
// (a location that cannot take their log included), so nothing stays
// frozen.
func (a *Activities) RunPodHooks(ctx context.Context, in v1alpha1.RunHooksInput) (*v1alpha1.RunHooksResult, error) {
	a, err := a.actingAs(in.ActingAs)
	if err != nil {
		return nil, err
	}
	log := a.Log.With(zap.String("backup", in.Backup))
	if run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location); err != nil {
		// A post hook unfreezes an application: hooks run even when the
		// backup's location cannot take their log.
		log.Warn("Hooks run without the backup's run log", zap.Error(err))
	} else {
		defer run.End()
		log = run.Log
	}
	log = log.With(zap.String("pod", in.Namespace+"/"+in.Pod), zap.String("phase", string(in.Phase)))
	res := &v1alpha1.RunHooksResult{Results: []v1alpha1.HookResult{}}
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &res.Results); err != nil {
			res.Results = nil
		}
	}
	attempt := activity.GetInfo(ctx).Attempt
	for i := len(res.Results); i < len(in.Hooks); i++ {
		h := in.Hooks[i]
		log.Info("Running hook", zap.Int("hook", i), zap.String("container", h.Container), zap.Strings("command", h.Command),
			zap.Int32("attempt", attempt))
		r, err := a.runHook(ctx, in, h, func() { activity.RecordHeartbeat(ctx, res.Results) })
		if err != nil {
			return nil, err
		}
		r.Attempt = attempt
		res.Results = append(res.Results, r)
		activity.RecordHeartbeat(ctx, res.Results)
		if r.Failed() {
			log.Warn("Hook failed", zap.Int("hook", i), zap.String("onError", string(h.OnError)), zap.Int("exitCode", r.ExitCode),
				zap.String("reason", r.Error), zap.String("stderr", r.Stderr))
			if in.Phase == v1alpha1.HookPre && h.OnError == v1alpha1.HookFail {
				break
			}
			continue
		}
		log.Info("Hook succeeded", zap.Int("hook", i), zap.Duration("took", r.Duration))
	}
	return res, nil
}

// runHook runs one hook. What the hook did, failures included, is the
// result; the error is what a retry may fix: the API server unreachable,
// or the activity canceled.
func (a *Activities) runHook(ctx context.Context, in v1alpha1.RunHooksInput, h v1alpha1.PodHook, beat func()) (v1alpha1.HookResult, error) {
	r := v1alpha1.HookResult{Pod: in.Namespace + "/" + in.Pod, Phase: in.Phase, Source: h.Source, Container: h.Container,
		Command: h.Command, OnError: h.OnError, ExitCode: -1}
	if h.Problem != "" {
		r.Error = h.Problem
		return r, nil
	}
	pod, err := a.Kube.CoreV1().Pods(in.Namespace).Get(ctx, in.Pod, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		r.Error = fmt.Sprintf("pod %s no longer exists", r.Pod)
		return r, nil
	case err != nil:
		return r, fmt.Errorf("get pod %s: %w", r.Pod, err)
	}
	if why := notRunning(pod, h.Container); why != "" {
		r.Error = why
		return r, nil
	}

	stdout, stderr := newTail(v1alpha1.HookOutputTail), newTail(v1alpha1.HookOutputTail)
	hctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	stop := tick.Every(a.heartbeatInterval(ctx), beat)
	start := time.Now()
	err = a.exec(hctx, in.Namespace, in.Pod, h.Container, h.Command, stdout, stderr)
	stop()
	r.Duration = time.Since(start).Round(time.Millisecond)
	r.Stdout, r.Stderr = stdout.String(), stderr.String()

	var exitErr utilexec.ExitError
	switch {
	case err == nil:
		r.ExitCode = 0
	case ctx.Err() != nil:
		return r, ctx.Err() // canceled, or out of the activity's time
	case errors.Is(hctx.Err(), context.DeadlineExceeded):
		r.Error = fmt.Sprintf("timed out after %s", h.Timeout)
	case errors.As(err, &exitErr):
		r.ExitCode = exitErr.ExitStatus()
		r.Error = fmt.Sprintf("exit code %d", r.ExitCode)
	default:
		return r, fmt.Errorf("exec in pod %s, container %s: %w", r.Pod, h.Container, err)
	}
	return r, nil
}

// notRunning says why the container cannot run a command, or "".
func notRunning(pod *corev1.Pod, container string) string {
	key := pod.Namespace + "/" + pod.Name
	if pod.DeletionTimestamp != nil {
		return fmt.Sprintf("pod %s is being deleted", key)
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			if s.State.Running == nil {
				return fmt.Sprintf("container %s of pod %s is not running", container, key)
			}
			return ""
		}
	}
	return fmt.Sprintf("container %s of pod %s has no status yet", container, key)
}

// exec runs command in the container through the API server: over
// WebSocket, or SPDY where the server does not upgrade to WebSocket.
func (a *Activities) exec(ctx context.Context, ns, pod, container string, command []string, stdout, stderr *tail) error {
	req := a.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(a.Config, "GET", req.URL().String())
	if err != nil {
		return fmt.Errorf("websocket executor: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(a.Config, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("spdy executor: %w", err)
	}
	exe, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	return exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
}

// heartbeatInterval is HeartbeatInterval (default 5 s), and at most a
// third of the step's heartbeat timeout, which a run may set down to 3 s.
func (a *Activities) heartbeatInterval(ctx context.Context) time.Duration {
	d := 5 * time.Second
	if a.HeartbeatInterval > 0 {
		d = a.HeartbeatInterval
	}
	if timeout := activity.GetInfo(ctx).HeartbeatTimeout; timeout > 0 {
		d = min(d, timeout/3)
	}
	return d
}
