package e2e

import (
	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/csi"
	"github.com/cairn-backup/cairn/activities/datamover"
	"github.com/cairn-backup/cairn/activities/etcd"
	"github.com/cairn-backup/cairn/activities/expose"
	"github.com/cairn-backup/cairn/activities/hooks"
	"github.com/cairn-backup/cairn/activities/repository"
	"github.com/cairn-backup/cairn/activities/restore"
	"github.com/cairn-backup/cairn/activities/store"
	"github.com/cairn-backup/cairn/workflows"
)

// The activities the tests look for in run histories, named from their
// methods as the workflows call them.
var (
	collectActivity             = workflows.ActivityName((*cluster.Activities)(nil).CollectResources)
	applyActivity               = workflows.ActivityName((*restore.Activities)(nil).ApplyResources)
	uploadVolumeActivity        = workflows.ActivityName((*datamover.Activities)(nil).UploadVolume)
	restoreVolumeDataActivity   = workflows.ActivityName((*datamover.Activities)(nil).RestoreVolumeData)
	deleteVolumeDataActivity    = workflows.ActivityName((*repository.Activities)(nil).DeleteVolumeData)
	maintainRepoActivity        = workflows.ActivityName((*repository.Activities)(nil).MaintainRepository)
	ensureRepositoryActivity    = workflows.ActivityName((*repository.Activities)(nil).EnsureRepository)
	finalizeBackupActivity      = workflows.ActivityName((*store.Activities)(nil).FinalizeBackup)
	planRestoreActivity         = workflows.ActivityName((*restore.Activities)(nil).PlanRestore)
	finalizeRestoreActivity     = workflows.ActivityName((*restore.Activities)(nil).FinalizeRestore)
	takeEtcdSnapshotActivity    = workflows.ActivityName((*etcd.Activities)(nil).TakeEtcdSnapshot)
	planRetentionActivity       = workflows.ActivityName((*store.Activities)(nil).PlanRetention)
	waitSnapshotActivity        = workflows.ActivityName((*csi.Activities)(nil).WaitVolumeSnapshot)
	deleteBackupDataActivity    = workflows.ActivityName((*store.Activities)(nil).DeleteBackupData)
	verifyBackupDataActivity    = workflows.ActivityName((*store.Activities)(nil).VerifyBackupData)
	verifyBackupVolumesActivity = workflows.ActivityName((*repository.Activities)(nil).VerifyBackupVolumes)
	exposeVolumeActivity        = workflows.ActivityName((*expose.Activities)(nil).ExposeVolume)
	awaitRestoredPodActivity    = workflows.ActivityName((*expose.Activities)(nil).AwaitRestoredPod)
	runRestoreHooksActivity     = workflows.ActivityName((*hooks.Activities)(nil).RunRestoreHooks)
)
