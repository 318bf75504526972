package backup

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// VerifyBackupWorkflow checks a backup's stored objects against its
// manifest (an activity that heartbeats the bytes it read), then its
// moved volume data with kopia's own verification.
func VerifyBackupWorkflow(ctx workflow.Context, req v1alpha1.VerifyBackupRequest) (*v1alpha1.VerifyBackupResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "backup", req.Backup)
	if err := workflow.UpsertTypedSearchAttributes(ctx, v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindVerify),
		v1alpha1.SearchAttrName.ValueSet(req.Backup), v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseInProgress))); err != nil {
		return nil, fmt.Errorf("set search attributes: %w", err)
	}
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(6*time.Hour, 2*workflows.HeartbeatTimeout(ctx)))
	var res v1alpha1.VerifyBackupResult
	if err := workflow.ExecuteActivity(actx, storeActs.VerifyBackupData, req).Get(ctx, &res); err != nil {
		flow.PublishPhase(ctx, logger, v1alpha1.PhaseFailed)
		return nil, fmt.Errorf("verify backup %s: %w", req.Backup, err)
	}
	if res.Manifest {
		if err := workflow.ExecuteActivity(actx, repositoryActs.VerifyBackupVolumes, req).Get(ctx, &res.VolumeData); err != nil {
			flow.PublishPhase(ctx, logger, v1alpha1.PhaseFailed)
			return nil, fmt.Errorf("verify the volume data of backup %s: %w", req.Backup, err)
		}
	}
	phase := v1alpha1.PhaseCompleted
	if !res.OK() {
		phase = v1alpha1.PhasePartiallyFailed
	}
	flow.PublishPhase(ctx, logger, phase)
	return &res, nil
}
