package backup

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// VerifyBackupWorkflow checks a backup's stored objects against its
// manifest (an activity that heartbeats the bytes it read), then its
// moved volume data with kopia's own verification.
func VerifyBackupWorkflow(ctx workflow.Context, req workflows.VerifyBackupRequest) (*workflows.VerifyBackupResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "backup", req.Backup)
	if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.SearchAttrKind.ValueSet(workflows.KindVerify),
		workflows.SearchAttrName.ValueSet(req.Backup), workflows.SearchAttrPhase.ValueSet(string(workflows.PhaseInProgress))); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(6*time.Hour, 2*workflows.HeartbeatTimeout(ctx)))
	var res workflows.VerifyBackupResult
	if err := workflow.ExecuteActivity(actx, storeActs.VerifyBackupData, req).Get(ctx, &res); err != nil {
		flow.PublishPhase(ctx, logger, workflows.PhaseFailed)
		return nil, fmt.Errorf("verify backup %s: %w", req.Backup, err)
	}
	if res.Manifest {
		if err := workflow.ExecuteActivity(actx, repositoryActs.VerifyBackupVolumes, req).Get(ctx, &res.VolumeData); err != nil {
			flow.PublishPhase(ctx, logger, workflows.PhaseFailed)
			return nil, fmt.Errorf("verify the volume data of backup %s: %w", req.Backup, err)
		}
	}
	phase := workflows.PhaseCompleted
	if !res.OK() {
		phase = workflows.PhasePartiallyFailed
	}
	flow.PublishPhase(ctx, logger, phase)
	return &res, nil
}
