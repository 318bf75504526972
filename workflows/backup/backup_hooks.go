package backup

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// hookAttempts bounds the tries of one pod's hooks of one phase when the
// API server or the worker fails under them; each try runs the hook that
// was cut off again.
const hookAttempts = 3

// podHooks is where one pod with hooks stands.
type podHooks struct {
	pod v1alpha1.HookedPod
	// waiting are the pod's claims whose snapshot is not yet ready (or
	// failed): its post hooks run when none is left.
	waiting     map[string]bool
	preStarted  bool
	preDone     bool
	preFailed   string // why a pre hook with onError Fail failed
	preOK       bool   // it has pre hooks, and every one succeeded
	postStarted bool
}

// hookRun holds the pods with hooks of a backup.
type hookRun struct {
	pods   []*podHooks
	claims map[string][]*podHooks // Volume.Key() -> the pods that mount it
	posts  workflow.WaitGroup
}

// planHooks asks which pods of the backup have hooks.
func (b *backupRun) planHooks(ctx workflow.Context) error {
	var volumes []v1alpha1.Volume
	for _, op := range b.status.Operations {
		volumes = append(volumes, op.Volume)
	}
	actx := workflow.WithActivityOptions(ctx, b.activityOptions(10*time.Minute))
	var res v1alpha1.PlanHooksResult
	in := v1alpha1.PlanHooksInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Volumes: volumes, ActingAs: b.opts.ActingAs}
	if err := workflow.ExecuteActivity(actx, hookActs.PlanBackupHooks, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("plan backup hooks: %w", err)
	}
	b.status.Warnings += len(res.Warnings)
	b.hookWarnings = res.Warnings
	b.hooks = &hookRun{claims: map[string][]*podHooks{}, posts: workflow.NewWaitGroup(ctx)}
	for _, p := range res.Pods {
		ph := &podHooks{pod: p, waiting: map[string]bool{}}
		for _, c := range p.Claims {
			ph.waiting[c] = true
			b.hooks.claims[c] = append(b.hooks.claims[c], ph)
		}
		b.hooks.pods = append(b.hooks.pods, ph)
	}
	if len(res.Pods) > 0 {
		b.logger.Info("Planned backup hooks", "pods", len(res.Pods), "skipped", len(res.Warnings))
	}
	return nil
}

// hasHooks reports whether any pod of the backup has hooks.
func (b *backupRun) hasHooks() bool { return b.hooks != nil && len(b.hooks.pods) > 0 }

// hooksWithoutVolumes runs the hooks of the pods with none of their
// volumes snapshotted: pre, then post right away.
func (b *backupRun) hooksWithoutVolumes(ctx workflow.Context) {
	if b.hooks == nil {
		return
	}
	for _, ph := range b.hooks.pods {
		if ctx.Err() != nil {
			return
		}
		if len(ph.pod.Claims) == 0 {
			b.runPre(ctx, ph)
			b.startPost(ctx, ph)
		}
	}
}

// beforeSnapshot runs the pre hooks of the pods that mount the volume,
// and returns why the volume must not be snapshotted ("" if it may be).
func (b *backupRun) beforeSnapshot(ctx workflow.Context, v v1alpha1.Volume) string {
	if b.hooks == nil {
		return ""
	}
	var failed []string
	for _, ph := range b.hooks.claims[v.Key()] {
		b.runPre(ctx, ph)
		if ph.preFailed != "" {
			failed = append(failed, ph.preFailed)
		}
	}
	return strings.Join(failed, "; ")
}

// snapshotTaken is told that a volume's snapshot is ready, or will never
// be: the post hooks of the pods waiting for no other volume start.
func (b *backupRun) snapshotTaken(ctx workflow.Context, v v1alpha1.Volume) {
	if b.hooks == nil {
		return
	}
	for _, ph := range b.hooks.claims[v.Key()] {
		delete(ph.waiting, v.Key())
		if len(ph.waiting) == 0 && ph.preDone {
			b.startPost(ctx, ph)
		}
	}
}

// runPre runs a pod's pre hooks once.
func (b *backupRun) runPre(ctx workflow.Context, ph *podHooks) {
	if ph.preStarted {
		return
	}
	ph.preStarted = true
	results := b.runHooks(ctx, ph.pod, v1alpha1.HookPre, ph.pod.Pre)
	ph.preDone, ph.preOK = true, len(ph.pod.Pre) > 0
	for _, r := range results {
		if r.Failed() {
			ph.preOK = false
		}
		if r.Failed() && r.OnError == v1alpha1.HookFail {
			ph.preFailed = hookFailure(r)
		}
	}
}

// consistency says how a pod volume's copy is taken: quiesced when a pod
// that mounts it ran every one of its pre hooks, crash-consistent
// otherwise.
func (b *backupRun) consistency(v v1alpha1.Volume) string {
	if b.hooks != nil {
		for _, ph := range b.hooks.claims[v.Key()] {
			if ph.preOK {
				return v1alpha1.ConsistencyHooks
			}
		}
	}
	return v1alpha1.ConsistencyCrash
}

// startPost runs a pod's post hooks, once, on a disconnected context of
// their own: a canceled or failing backup still unfreezes its pods. end
// waits for them.
func (b *backupRun) startPost(ctx workflow.Context, ph *podHooks) {
	if ph.postStarted || !ph.preStarted {
		return
	}
	ph.postStarted = true
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	b.hooks.posts.Add(1)
	workflow.Go(dctx, func(gctx workflow.Context) {
		defer b.hooks.posts.Done()
		b.runHooks(gctx, ph.pod, v1alpha1.HookPost, ph.pod.Post)
	})
}

// finishHooks runs the post hooks of every pod whose pre hooks ran and
// whose post hooks have not (the backup failed or was canceled before its
// snapshots), and waits for all post hooks to end.
func (b *backupRun) finishHooks(ctx workflow.Context) {
	if b.hooks == nil {
		return
	}
	for _, ph := range b.hooks.pods {
		b.startPost(ctx, ph)
	}
	b.hooks.posts.Wait(ctx)
}

// runHooks runs one phase of a pod's hooks and records their results. An
// activity that fails for good (after hookAttempts) is one failed hook.
func (b *backupRun) runHooks(ctx workflow.Context, pod v1alpha1.HookedPod, phase v1alpha1.HookPhase, hooks []v1alpha1.PodHook) []v1alpha1.HookResult {
	if len(hooks) == 0 {
		return nil
	}
	total := time.Minute
	for _, h := range hooks {
		total += h.Timeout
	}
	opts := b.activityOptions(total)
	opts.RetryPolicy.MaximumAttempts = hookAttempts
	actx := workflow.WithActivityOptions(ctx, opts)
	in := v1alpha1.RunHooksInput{Backup: b.spec.Name, Location: b.spec.StorageLocation, Namespace: pod.Namespace, Pod: pod.Name,
		Phase: phase, Hooks: hooks, ActingAs: b.opts.ActingAs}
	var res v1alpha1.RunHooksResult
	if err := workflow.ExecuteActivity(actx, hookActs.RunPodHooks, in).Get(ctx, &res); err != nil {
		res.Results = []v1alpha1.HookResult{{Pod: pod.Key(), Phase: phase, Source: hooks[0].Source, Container: hooks[0].Container,
			Command: hooks[0].Command, OnError: v1alpha1.HookFail, ExitCode: -1, Error: "hooks did not complete: " + flow.Reason(err)}}
	}
	for _, r := range res.Results {
		b.status.Hooks = append(b.status.Hooks, r)
		switch {
		case !r.Failed():
		case r.OnError == v1alpha1.HookContinue:
			b.status.Warnings++
			b.logger.Warn("Hook failed; the backup goes on", "pod", r.Pod, "phase", r.Phase, "reason", r.Error)
		default:
			b.status.Errors++
			b.logger.Warn("Hook failed", "pod", r.Pod, "phase", r.Phase, "reason", r.Error)
		}
	}
	b.updateDetails(ctx)
	return res.Results
}

// hookFailure is a failed hook in one line: where, why, and its stderr.
func hookFailure(r v1alpha1.HookResult) string {
	msg := fmt.Sprintf("%s hook of pod %s (%s) failed: %s", r.Phase, r.Pod, r.Source, r.Error)
	if s := strings.TrimSpace(r.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// hooksFailure summarizes the hooks that failed with onError Fail, for a
// PartiallyFailed backup's reason.
func (b *backupRun) hooksFailure() string {
	var failed []string
	for _, r := range b.status.Hooks {
		if r.Failed() && r.OnError == v1alpha1.HookFail {
			failed = append(failed, hookFailure(r))
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return fmt.Sprintf("%d hooks failed: %s", len(failed), strings.Join(failed, "; "))
}
