package backup

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

// hookPods: db mounts the "data" claim and has pre and post hooks; web
// mounts nothing the backup snapshots and has a pre hook.
func hookPods(onError v1alpha1.HookOnError) *v1alpha1.PlanHooksResult {
	hook := func(cmd string) []v1alpha1.PodHook {
		return []v1alpha1.PodHook{{Source: "spec hook h", Container: "c", Command: []string{cmd}, OnError: onError}}
	}
	return &v1alpha1.PlanHooksResult{Pods: []v1alpha1.HookedPod{
		{Namespace: "shop", Name: "db", Claims: []string{"shop/data"}, Pre: hook("/freeze"), Post: hook("/unfreeze")},
		{Namespace: "shop", Name: "web", Pre: hook("/flush")},
	}}
}

// stepLog records the hooks and snapshot steps in the order they start.
type stepLog struct {
	mu    sync.Mutex
	steps []string
}

func (l *stepLog) listen(env *testsuite.TestWorkflowEnvironment) {
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		step := ""
		switch info.ActivityType.Name {
		case workflows.ActivityName(hookActs.RunPodHooks):
			var in v1alpha1.RunHooksInput
			_ = args.Get(&in)
			step = string(in.Phase) + " " + in.Pod
		case workflows.ActivityName(csiActs.CreateVolumeSnapshot):
			var in v1alpha1.CreateSnapshotInput
			_ = args.Get(&in)
			step = "snapshot " + in.Volume.Claim
		default:
			return
		}
		l.mu.Lock()
		l.steps = append(l.steps, step)
		l.mu.Unlock()
	})
}

func (l *stepLog) index(t *testing.T, step string) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.Index(l.steps, step)
	require.GreaterOrEqual(t, i, 0, "%q ran (steps: %v)", step, l.steps)
	return i
}

// runHooksAs answers RunPodHooks: hooks whose command is failing exit 1
// with stderr "frozen solid".
func runHooksAs(failing string) func(context.Context, v1alpha1.RunHooksInput) (*v1alpha1.RunHooksResult, error) {
	return func(_ context.Context, in v1alpha1.RunHooksInput) (*v1alpha1.RunHooksResult, error) {
		res := &v1alpha1.RunHooksResult{}
		for _, h := range in.Hooks {
			r := v1alpha1.HookResult{Pod: in.Namespace + "/" + in.Pod, Phase: in.Phase, Source: h.Source, Container: h.Container,
				Command: h.Command, OnError: h.OnError, Attempt: 1}
			if h.Command[0] == failing {
				r.ExitCode, r.Error, r.Stderr = 1, "exit code 1", "frozen solid\n"
			}
			res.Results = append(res.Results, r)
		}
		return res, nil
	}
}

// hookBackupEnv runs a backup of hookPods; special, if not nil, sets up
// its own answers first (the first matching answer wins).
func hookBackupEnv(t *testing.T, onError v1alpha1.HookOnError, failing string,
	special func(*testsuite.TestWorkflowEnvironment)) (*testsuite.TestWorkflowEnvironment, *stepLog) {
	env := newBackupEnv(t)
	if special != nil {
		special(env)
	}
	env.OnActivity(clusterActs.PlanBackup, mock.Anything, mock.Anything).Return(threeTypes(), nil).Once()
	env.OnActivity(csiActs.PlanVolumes, mock.Anything, mock.Anything).Return(flowtest.TwoVolumes(), nil).Once()
	env.OnActivity(clusterActs.CollectResources, mock.Anything, mock.Anything).Return(collected(1)).Once()
	env.OnActivity(clusterActs.CollectRelated, mock.Anything, mock.Anything).Return(&v1alpha1.CollectRelatedResult{}, nil).Once()
	env.OnActivity(hookActs.PlanBackupHooks, mock.Anything, mock.MatchedBy(func(in v1alpha1.PlanHooksInput) bool {
		return len(in.Volumes) == 2
	})).Return(hookPods(onError), nil).Once()
	env.OnActivity(hookActs.RunPodHooks, mock.Anything, mock.Anything).Return(runHooksAs(failing))
	env.OnActivity(csiActs.CreateVolumeSnapshot, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in v1alpha1.CreateSnapshotInput) (*v1alpha1.CreateSnapshotResult, error) {
			return &v1alpha1.CreateSnapshotResult{Name: v1alpha1.SnapshotName(in.Backup, in.Volume)}, nil
		}).Maybe()
	env.OnActivity(csiActs.WaitVolumeSnapshot, mock.Anything, mock.Anything).Return(flowtest.ReadyInfo).Maybe()
	env.OnActivity(csiActs.CollectVolumeSnapshots, mock.Anything, mock.Anything).Return(&v1alpha1.CollectSnapshotsResult{}, nil).Maybe()
	env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(&v1alpha1.FinalizeResult{}, nil).Maybe()
	steps := &stepLog{}
	steps.listen(env)
	return env, steps
}

// TestHooksFrameTheSnapshotsOfTheirPod: a pod's pre hooks run before its
// volume's snapshot, its post hooks after; a pod without snapshotted
// volumes runs its hooks too. Every result is in the status.
func TestHooksFrameTheSnapshotsOfTheirPod(t *testing.T) {
	env, steps := hookBackupEnv(t, v1alpha1.HookFail, "", nil)
	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	var st v1alpha1.BackupStatus
	require.NoError(t, env.GetWorkflowResult(&st))

	assert.Equal(t, v1alpha1.PhaseCompleted, st.Phase)
	assert.Less(t, steps.index(t, "pre db"), steps.index(t, "snapshot data"))
	assert.Less(t, steps.index(t, "snapshot data"), steps.index(t, "post db"))
	steps.index(t, "pre web")
	steps.index(t, "snapshot logs")
	require.Len(t, st.Hooks, 3)
	for _, r := range st.Hooks {
		assert.False(t, r.Failed(), "%+v", r)
	}
}

// TestFailedPreHookKeepsItsPodsVolumesFromTheSnapshot: with onError Fail,
// the pod's volume is not snapshotted, its post hooks still run, and the
// backup is PartiallyFailed with the hook's stderr.
func TestFailedPreHookKeepsItsPodsVolumesFromTheSnapshot(t *testing.T) {
	env, steps := hookBackupEnv(t, v1alpha1.HookFail, "/freeze", nil)
	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	var st v1alpha1.BackupStatus
	require.NoError(t, env.GetWorkflowResult(&st))

	assert.Equal(t, v1alpha1.PhasePartiallyFailed, st.Phase)
	assert.NotContains(t, steps.steps, "snapshot data")
	steps.index(t, "snapshot logs")
	steps.index(t, "post db")
	assert.Equal(t, v1alpha1.OperationFailed, st.Operations[0].Phase)
	assert.Contains(t, st.Operations[0].Error, "not snapshotted: pre hook of pod shop/db (spec hook h) failed: exit code 1: frozen solid")
	assert.Equal(t, v1alpha1.OperationCompleted, st.Operations[1].Phase)
	assert.Contains(t, st.FailureReason, "1 hooks failed: pre hook of pod shop/db (spec hook h) failed: exit code 1: frozen solid")
	assert.Equal(t, 2, st.Errors, "the hook and the volume it kept from the snapshot")
}

// TestFailedPreHookWithContinueIsAWarning: the snapshot is taken.
func TestFailedPreHookWithContinueIsAWarning(t *testing.T) {
	var finalized v1alpha1.FinalizeInput
	env, steps := hookBackupEnv(t, v1alpha1.HookContinue, "/freeze", func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(storeActs.FinalizeBackup, mock.Anything, mock.Anything).Return(
			func(_ context.Context, in v1alpha1.FinalizeInput) (*v1alpha1.FinalizeResult, error) {
				finalized = in
				return &v1alpha1.FinalizeResult{}, nil
			}).Once()
	})
	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.NoError(t, env.GetWorkflowError())
	var st v1alpha1.BackupStatus
	require.NoError(t, env.GetWorkflowResult(&st))

	assert.Equal(t, v1alpha1.PhaseCompleted, st.Phase)
	assert.Less(t, steps.index(t, "pre db"), steps.index(t, "snapshot data"))
	assert.Equal(t, 0, st.Errors)
	assert.Equal(t, 2, finalized.Status.Warnings, "the plan's skipped claim and the hook, until finalize counts the stored ones")
	assert.Len(t, finalized.Status.Hooks, 3, "finalize stores them; the failed one is a warning of its pod")
}

// TestCanceledDuringAPreHookStillRunsThePostHook: the post hook runs on
// a disconnected context, and the backup ends Canceled.
func TestCanceledDuringAPreHookStillRunsThePostHook(t *testing.T) {
	env, steps := hookBackupEnv(t, v1alpha1.HookFail, "", func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(hookActs.RunPodHooks, mock.Anything, mock.MatchedBy(func(in v1alpha1.RunHooksInput) bool {
			return in.Pod == "db" && in.Phase == v1alpha1.HookPre
		})).Return(func(ctx context.Context, _ v1alpha1.RunHooksInput) (*v1alpha1.RunHooksResult, error) {
			env.CancelWorkflow()
			<-ctx.Done()
			return nil, ctx.Err()
		}).Once()
	})
	env.ExecuteWorkflow(BackupWorkflow, testRequest())
	require.Error(t, env.GetWorkflowError())
	st := queryStatus(t, env)

	assert.Equal(t, v1alpha1.PhaseCanceled, st.Phase)
	assert.Less(t, steps.index(t, "pre db"), steps.index(t, "post db"))
	assert.NotContains(t, steps.steps, "snapshot data")
}
