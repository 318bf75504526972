// Package worker registers cairn's workflows and activities on their task
// queue and builds the Temporal worker that runs them.
package worker

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/etcd"
	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/activities/repository"
	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/activities/store"
	"github.com/cairn-backup/cairn/workflows"
)

// Activities are the implementations a worker hosts.
type Activities struct {
	Cluster *cluster.Activities
	Store   *store.Activities
	Restore *restore.Activities
	Etcd    *etcd.Activities
	CSI     *csi.Activities
	Expose  *expose.Activities
	Repo    *repository.Activities
}

// Options tune a worker.
type Options struct {
	// MaxConcurrentActivities bounds activities running at once in this
	// process (0: the SDK default).
	MaxConcurrentActivities int
}

// New returns a worker on TaskQueue with everything registered.
func New(c client.Client, acts Activities, opts Options) sdkworker.Worker {
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
		Interceptors:                       []interceptor.WorkerInterceptor{&errorSurfacer{}},
	})
	Register(w, acts)
	return w
}

// Register puts cairn's workflows and activities on a registry (a worker,
// a replayer or a test environment).
func Register(r sdkworker.Registry, acts Activities) {
	RegisterWorkflows(r)
	if acts.Cluster != nil {
		r.RegisterActivityWithOptions(acts.Cluster.PlanBackup, activity.RegisterOptions{Name: workflows.PlanBackupActivity})
		r.RegisterActivityWithOptions(acts.Cluster.CollectResources, activity.RegisterOptions{Name: workflows.CollectActivity})
		r.RegisterActivityWithOptions(acts.Cluster.CollectRelated, activity.RegisterOptions{Name: workflows.CollectRelatedActivity})
		r.RegisterActivityWithOptions(acts.Cluster.UnknownResources, activity.RegisterOptions{Name: workflows.UnknownResourcesActivity})
	}
	if acts.Store != nil {
		r.RegisterActivityWithOptions(acts.Store.FinalizeBackup, activity.RegisterOptions{Name: workflows.FinalizeBackupActivity})
		r.RegisterActivityWithOptions(acts.Store.CleanupBackupWork, activity.RegisterOptions{Name: workflows.CleanupBackupActivity})
		r.RegisterActivityWithOptions(acts.Store.DeleteBackupData, activity.RegisterOptions{Name: workflows.DeleteBackupDataActivity})
		r.RegisterActivityWithOptions(acts.Store.ListExpiredBackups, activity.RegisterOptions{Name: workflows.ListExpiredBackupsActivity})
		r.RegisterActivityWithOptions(acts.Store.ListScheduleRuns, activity.RegisterOptions{Name: workflows.ListScheduleRunsActivity})
		r.RegisterActivityWithOptions(acts.Store.ListExpiredEtcdSnapshots, activity.RegisterOptions{Name: workflows.ListExpiredEtcdActivity})
	}
	if a := acts.Etcd; a != nil {
		r.RegisterActivityWithOptions(a.TakeEtcdSnapshot, activity.RegisterOptions{Name: workflows.TakeEtcdSnapshotActivity})
		r.RegisterActivityWithOptions(a.VerifyEtcdSnapshot, activity.RegisterOptions{Name: workflows.VerifyEtcdSnapshotActivity})
		r.RegisterActivityWithOptions(a.CommitEtcdSnapshot, activity.RegisterOptions{Name: workflows.CommitEtcdSnapshotActivity})
		r.RegisterActivityWithOptions(a.DiscardEtcdSnapshot, activity.RegisterOptions{Name: workflows.DiscardEtcdSnapshotActivity})
	}
	if a := acts.CSI; a != nil {
		r.RegisterActivityWithOptions(a.PlanVolumes, activity.RegisterOptions{Name: workflows.PlanVolumesActivity})
		r.RegisterActivityWithOptions(a.CreateVolumeSnapshot, activity.RegisterOptions{Name: workflows.CreateVolumeSnapshotActivity})
		r.RegisterActivityWithOptions(a.WaitVolumeSnapshot, activity.RegisterOptions{Name: workflows.WaitVolumeSnapshotActivity})
		r.RegisterActivityWithOptions(a.RemoveVolumeSnapshot, activity.RegisterOptions{Name: workflows.RemoveVolumeSnapshotActivity})
		r.RegisterActivityWithOptions(a.CollectVolumeSnapshots, activity.RegisterOptions{Name: workflows.CollectVolumeSnapshotsActivity})
		r.RegisterActivityWithOptions(a.DeleteBackupSnapshots, activity.RegisterOptions{Name: workflows.DeleteBackupSnapshotsActivity})
	}
	if a := acts.Expose; a != nil {
		r.RegisterActivityWithOptions(a.ExposeVolume, activity.RegisterOptions{Name: workflows.ExposeVolumeActivity})
		r.RegisterActivityWithOptions(a.DiagnoseExposure, activity.RegisterOptions{Name: workflows.DiagnoseExposeActivity})
		r.RegisterActivityWithOptions(a.CleanupExposure, activity.RegisterOptions{Name: workflows.CleanupExposeActivity})
		r.RegisterActivityWithOptions(a.PlaceDataMover, activity.RegisterOptions{Name: workflows.PlaceDataMoverActivity})
		r.RegisterActivityWithOptions(a.RequestDataMoverSlot, activity.RegisterOptions{Name: workflows.RequestDataMoverSlotActivity})
		r.RegisterActivityWithOptions(a.ClosedSlotHolders, activity.RegisterOptions{Name: workflows.ClosedSlotHoldersActivity})
		r.RegisterActivityWithOptions(a.HandOverVolume, activity.RegisterOptions{Name: workflows.HandOverVolumeActivity})
		r.RegisterActivityWithOptions(a.FinishVolumeRestores, activity.RegisterOptions{Name: workflows.FinishVolumeRestoresActivity})
	}
	if a := acts.Repo; a != nil {
		r.RegisterActivityWithOptions(a.DeleteVolumeData, activity.RegisterOptions{Name: workflows.DeleteVolumeDataActivity})
		r.RegisterActivityWithOptions(a.MaintainRepository, activity.RegisterOptions{Name: workflows.MaintainRepositoryActivity})
	}
	if a := acts.Restore; a != nil {
		r.RegisterActivityWithOptions(a.PlanRestore, activity.RegisterOptions{Name: workflows.PlanRestoreActivity})
		r.RegisterActivityWithOptions(a.ApplyResources, activity.RegisterOptions{Name: workflows.ApplyActivity})
		r.RegisterActivityWithOptions(a.WaitCRDsEstablished, activity.RegisterOptions{Name: workflows.WaitCRDsActivity})
		r.RegisterActivityWithOptions(a.RelinkOwners, activity.RegisterOptions{Name: workflows.RelinkOwnersActivity})
		r.RegisterActivityWithOptions(a.FinalizeRestore, activity.RegisterOptions{Name: workflows.FinalizeRestoreActivity})
		r.RegisterActivityWithOptions(a.CleanupRestoreWork, activity.RegisterOptions{Name: workflows.CleanupRestoreActivity})
	}
}

// RegisterWorkflows registers the workflows only.
func RegisterWorkflows(r sdkworker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(workflows.BackupWorkflow, workflow.RegisterOptions{Name: workflows.BackupWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.RestoreWorkflow, workflow.RegisterOptions{Name: workflows.RestoreWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.DeleteBackupWorkflow, workflow.RegisterOptions{Name: workflows.DeleteBackupWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.ExpireBackupsWorkflow, workflow.RegisterOptions{Name: workflows.ExpireBackupsWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.EtcdSnapshotWorkflow, workflow.RegisterOptions{Name: workflows.EtcdSnapshotWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.ScheduledBackupWorkflow, workflow.RegisterOptions{Name: workflows.ScheduledBackupWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.VolumeSnapshotWorkflow, workflow.RegisterOptions{Name: workflows.VolumeSnapshotWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.VolumeRestoreWorkflow, workflow.RegisterOptions{Name: workflows.VolumeRestoreWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.DataMoverSlotsWorkflow, workflow.RegisterOptions{Name: workflows.DataMoverSlotsWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.RepositoryMaintenanceWorkflow, workflow.RegisterOptions{Name: workflows.RepositoryMaintenanceWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.ValidateFiltersWorkflow, workflow.RegisterOptions{Name: workflows.ValidateFiltersWorkflowName})
}
