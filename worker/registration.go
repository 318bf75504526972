package worker

import (
	"maps"
	"slices"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/activities/datamover"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/backup"
	"github.com/cairn-backup/cairn/workflows/deletion"
	"github.com/cairn-backup/cairn/workflows/etcdsnapshot"
	"github.com/cairn-backup/cairn/workflows/extension"
	"github.com/cairn-backup/cairn/workflows/restore"
	"github.com/cairn-backup/cairn/workflows/schedule"
	"github.com/cairn-backup/cairn/workflows/volume"
)

// The registration lists of cairn's two process kinds. Workflows are
// registered under their names in package workflows, which the starter and
// parent workflows use; activities under their method names, which is how
// the workflows reference them. TestEveryCalledActivityIsRegistered checks
// these lists against what the workflow packages call.

// workerWorkflows are the workflows the worker runs, by name.
var workerWorkflows = map[string]any{
	v1alpha1.BackupWorkflowName:                backup.BackupWorkflow,
	v1alpha1.BackupDryRunWorkflowName:          backup.BackupDryRunWorkflow,
	v1alpha1.ValidateFiltersWorkflowName:       backup.ValidateFiltersWorkflow,
	v1alpha1.RestoreWorkflowName:               restore.RestoreWorkflow,
	v1alpha1.RestoreDryRunWorkflowName:         restore.RestoreDryRunWorkflow,
	v1alpha1.VolumeSnapshotWorkflowName:        volume.VolumeSnapshotWorkflow,
	v1alpha1.PodVolumeBackupWorkflowName:       volume.PodVolumeBackupWorkflow,
	v1alpha1.VolumeRestoreWorkflowName:         volume.VolumeRestoreWorkflow,
	v1alpha1.PodVolumeRestoreWorkflowName:      volume.PodVolumeRestoreWorkflow,
	v1alpha1.DataMoverSlotsWorkflowName:        volume.DataMoverSlotsWorkflow,
	v1alpha1.ScheduledBackupWorkflowName:       schedule.ScheduledBackupWorkflow,
	v1alpha1.ApplyRetentionWorkflowName:        schedule.ApplyRetentionWorkflow,
	v1alpha1.DeleteBackupWorkflowName:          deletion.DeleteBackupWorkflow,
	v1alpha1.ExpireBackupsWorkflowName:         deletion.ExpireBackupsWorkflow,
	v1alpha1.RepositoryMaintenanceWorkflowName: deletion.RepositoryMaintenanceWorkflow,
	v1alpha1.EtcdSnapshotWorkflowName:          etcdsnapshot.EtcdSnapshotWorkflow,
	v1alpha1.VerifyBackupWorkflowName:          backup.VerifyBackupWorkflow,
	v1alpha1.ExtensionCallWorkflowName:         extension.CallWorkflow,
	v1alpha1.ExtensionOperationWorkflowName:    extension.OperationWorkflow,
}

// workerActivities are the activities the worker runs: all but the data
// movers'. A nil group is left out (tests host only some).
func workerActivities(a Activities) []any {
	var list []any
	if c := a.Cluster; c != nil {
		list = append(list, c.PlanBackup, c.CollectResources, c.CollectRelated, c.CollectAdditional, c.RunOperations, c.CancelOperations,
			c.UnknownResources)
	}
	if s := a.Store; s != nil {
		list = append(list, s.FinalizeBackup, s.CleanupBackupWork, s.CheckBackupDeletable, s.RunDeleteActions, s.DeleteBackupData,
			s.ListExpiredBackups, s.ListScheduleRuns, s.PlanRetention, s.ListExpiredEtcdSnapshots, s.VerifyBackupData,
			s.SummarizeDryRun, s.DiscardDryRun)
	}
	if e := a.Etcd; e != nil {
		list = append(list, e.TakeEtcdSnapshot, e.VerifyEtcdSnapshot, e.CommitEtcdSnapshot, e.DiscardEtcdSnapshot)
	}
	if c := a.CSI; c != nil {
		list = append(list, c.PlanVolumes, c.CreateVolumeSnapshot, c.WaitVolumeSnapshot,
			c.RemoveVolumeSnapshot, c.CollectVolumeSnapshots, c.DeleteBackupSnapshots)
	}
	if h := a.Hooks; h != nil {
		list = append(list, h.PlanBackupHooks, h.RunPodHooks, h.RunRestoreHooks)
	}
	if e := a.Expose; e != nil {
		list = append(list, e.ExposeVolume, e.DiagnoseExposure, e.WatchDataMoverStart, e.CleanupExposure, e.PlaceDataMover,
			e.RequestDataMoverSlot, e.ClosedSlotHolders, e.HandOverVolume, e.FinishVolumeRestores, e.AwaitRestoredPod)
	}
	if r := a.Repo; r != nil {
		list = append(list, r.EnsureRepository, r.DeleteVolumeData, r.MaintainRepository, r.VerifyBackupVolumes)
	}
	if r := a.Restore; r != nil {
		list = append(list, r.PlanRestore, r.ApplyResources, r.WaitCRDsEstablished, r.RelinkOwners,
			r.FinalizeRestore, r.CleanupRestoreWork, r.SummarizeRestoreDryRun, r.DiscardRestoreDryRun,
			r.RunRestoreOperations, r.CancelRestoreOperations)
	}
	return list
}

// dataMoverActivities are the activities a data mover process runs, on
// its one operation's task queue.
func dataMoverActivities(a *datamover.Activities) []any {
	return []any{a.UploadVolume, a.RestoreVolumeData, a.MarkPodVolume}
}

// Register puts the worker's workflows and activities on a registry (a
// worker, a replayer or a test environment).
func Register(r sdkworker.Registry, acts Activities) {
	RegisterWorkflows(r)
	registerActivities(r, workerActivities(acts))
}

// WorkflowNames are the names of the workflows the worker runs, sorted.
func WorkflowNames() []string {
	return slices.Sorted(maps.Keys(workerWorkflows))
}

// RegisterWorkflows registers the worker's workflows only.
func RegisterWorkflows(r sdkworker.WorkflowRegistry) {
	for name, fn := range workerWorkflows {
		r.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
	}
}

func registerDataMover(r sdkworker.ActivityRegistry, a *datamover.Activities) {
	registerActivities(r, dataMoverActivities(a))
}

func registerActivities(r sdkworker.ActivityRegistry, list []any) {
	for _, fn := range list {
		r.RegisterActivity(fn)
	}
}
