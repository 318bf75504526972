package backup

import (
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// versionPlanBesideCollect marks the runs that plan volumes and hooks
// while the resource types are collected, instead of before.
const versionPlanBesideCollect = "plan-volumes-beside-collect"

// planAndCollect plans the volumes and hooks, and collects the resource
// types. Neither needs the other: collection writes only its parts, and
// the volumes and hooks are first used once collection is done. So they
// run side by side, and a small backup does not wait for two more round
// trips through Temporal before its lists start. The first step to fail
// for good cancels the other and is the error returned: a cluster
// without the snapshot API still fails the backup at once.
func (b *backupRun) planAndCollect(ctx workflow.Context, plan *v1alpha1.PlanResult) error {
	if b.version(ctx, versionPlanBesideCollect, 1) == workflow.DefaultVersion {
		if err := b.planVolumes(ctx); err != nil {
			return err
		}
		if err := b.planHooks(ctx); err != nil {
			return err
		}
		return b.collectAll(ctx, plan)
	}
	sctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	var firstErr error
	fail := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	planned := workflow.NewWaitGroup(ctx)
	planned.Add(1)
	workflow.Go(sctx, func(gctx workflow.Context) {
		defer planned.Done()
		err := b.planVolumes(gctx)
		if err == nil {
			err = b.planHooks(gctx)
		}
		fail(err)
	})
	fail(b.collectAll(sctx, plan))
	planned.Wait(ctx)
	return firstErr
}
