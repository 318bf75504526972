package restore

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// restoreHooksTimeout bounds the step: hooks wait for their containers
// (DefaultRestoreWaitTimeout each, several pods at once).
const restoreHooksTimeout = 2 * time.Hour

// runHooks runs the post-restore exec hooks of the restored pods, once
// they run, and records what each did.
func (r *restoreRun) runHooks(ctx workflow.Context) error {
	actx := workflow.WithActivityOptions(ctx, r.activityOptions(restoreHooksTimeout))
	in := v1alpha1.RestoreHooksInput{Restore: r.spec.Name, Backup: r.spec.BackupName, Location: r.spec.StorageLocation,
		Hooks: r.spec.Hooks, NamespaceMapping: r.spec.NamespaceMapping, ActingAs: r.opts.ActingAs}
	var res v1alpha1.RestoreHooksResult
	if err := workflow.ExecuteActivity(actx, hookActs.RunRestoreHooks, in).Get(ctx, &res); err != nil {
		return fmt.Errorf("post-restore hooks: %w", err)
	}
	r.status.Hooks = res.Results
	if len(res.Results) > 0 {
		r.logger.Info("Ran restore hooks", "hooks", len(res.Results))
	}
	r.updateDetails(ctx)
	return nil
}

// hooksFailure summarizes the restore hooks that failed with onError
// Fail, for a PartiallyFailed restore's reason.
func (r *restoreRun) hooksFailure() string {
	var failed []string
	for _, h := range r.status.Hooks {
		if h.Failed() && h.OnError != v1alpha1.HookContinue {
			failed = append(failed, fmt.Sprintf("pod %s (%s): %s", h.Pod, h.Source, h.Error))
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return fmt.Sprintf("%d post-restore hooks failed: %s", len(failed), strings.Join(failed, "; "))
}
