package starter

import (
	"context"
	"io"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// Service is what the CLI does with cairn: Client does it through
// Temporal, remote.Client through the starter API, as a caller the API
// authenticates and authorizes.
type Service interface {
	CreateBackup(ctx context.Context, req CreateBackupRequest) (*CreateResult, error)
	DryRunBackup(ctx context.Context, req CreateBackupRequest) (*v1alpha1.BackupDryRun, error)
	GetBackup(ctx context.Context, name string) (*BackupView, error)
	ListBackups(ctx context.Context) (*BackupList, error)
	CancelBackup(ctx context.Context, name string) (*BackupView, error)
	DeleteBackup(ctx context.Context, name string, cancelRunning bool) (*CreateResult, error)
	BackupLogs(ctx context.Context, name string, w io.Writer) error
	VerifyBackup(ctx context.Context, name string, full bool) (*v1alpha1.VerifyBackupResult, error)

	CreateRestore(ctx context.Context, req CreateRestoreRequest) (*CreateResult, error)
	DryRunRestore(ctx context.Context, req CreateRestoreRequest) (*v1alpha1.RestoreDryRun, error)
	GetRestore(ctx context.Context, name string) (*RestoreView, error)
	ListRestores(ctx context.Context) (*RestoreList, error)
	CancelRestore(ctx context.Context, name string) (*RestoreView, error)
	RestoreLogs(ctx context.Context, name string, w io.Writer) error
	RestoreResults(ctx context.Context, name string) (*v1alpha1.RestoreResults, error)

	CreateSchedule(ctx context.Context, spec v1alpha1.ScheduleSpec) (*CreateResult, error)
	GetSchedule(ctx context.Context, name string) (*ScheduleView, error)
	ListSchedules(ctx context.Context) (*ScheduleList, error)
	UpdateSchedule(ctx context.Context, name string, spec v1alpha1.ScheduleSpec) (*ScheduleView, error)
	PauseSchedule(ctx context.Context, name, note string) (*ScheduleView, error)
	UnpauseSchedule(ctx context.Context, name, note string) (*ScheduleView, error)
	TriggerSchedule(ctx context.Context, name string) (*TriggerResult, error)
	DeleteSchedule(ctx context.Context, name string) (*ScheduleDeleted, error)

	CreateEtcdSnapshot(ctx context.Context, spec v1alpha1.EtcdSnapshotSpec) (*CreateResult, error)
	GetEtcdSnapshot(ctx context.Context, name string) (*EtcdSnapshotView, error)
	ListEtcdSnapshots(ctx context.Context) (*EtcdSnapshotList, error)
	DeleteEtcdSnapshot(ctx context.Context, name string) (*CreateResult, error)

	// WaitRun waits until a run that CreateResult named ends, returning
	// its error.
	WaitRun(ctx context.Context, workflowID, runID string) error
	// DefaultLocation is where runs that name no location go, as a
	// listing says where it looked.
	DefaultLocation() string
}

var _ Service = (*Client)(nil)
