package controller

import (
	"context"

	"github.com/cairn-backup/cairn/api/v1alpha1"

	"github.com/cairn-backup/cairn/starter"
)

// runs is what the controller needs of the starter client; tests give it
// a fake.
type runs interface {
	CreateBackup(ctx context.Context, req starter.CreateBackupRequest) (*starter.CreateResult, error)
	GetBackup(ctx context.Context, name string) (*starter.BackupView, error)
	ListBackups(ctx context.Context) (*starter.BackupList, error)
	DeleteBackup(ctx context.Context, name string, cancelRunning bool) (*starter.CreateResult, error)
	CreateRestore(ctx context.Context, req starter.CreateRestoreRequest) (*starter.CreateResult, error)
	GetRestore(ctx context.Context, name string) (*starter.RestoreView, error)
	WaitRun(ctx context.Context, workflowID, runID string) error
	CreateSchedule(ctx context.Context, spec v1alpha1.ScheduleSpec) (*starter.CreateResult, error)
	GetSchedule(ctx context.Context, name string) (*starter.ScheduleView, error)
	UpdateSchedule(ctx context.Context, name string, spec v1alpha1.ScheduleSpec) (*starter.ScheduleView, error)
	PauseSchedule(ctx context.Context, name, note string) (*starter.ScheduleView, error)
	UnpauseSchedule(ctx context.Context, name, note string) (*starter.ScheduleView, error)
	DeleteSchedule(ctx context.Context, name string) (*starter.ScheduleDeleted, error)
}

var _ runs = (*starter.Client)(nil)
