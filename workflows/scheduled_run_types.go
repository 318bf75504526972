package workflows

import (
	"time"
)

// ScheduledBackupRequest is the argument a schedule starts each run with.
type ScheduledBackupRequest struct {
	Schedule ScheduleSpec `json:"schedule"`
}

// ScheduleRunsInput asks for the finished runs of a schedule.
type ScheduleRunsInput struct {
	Schedule ScheduleSpec `json:"schedule"`
}

// ScheduleRunsResult lists a schedule's finished runs, and the interval
// its spec gives at the time of listing (for the overdue check).
type ScheduleRunsResult struct {
	Runs     []ScheduleRun `json:"runs"`
	Interval time.Duration `json:"interval"`
}

// ScheduledBackupResult is what one scheduled run did.
type ScheduledBackupResult struct {
	Schedule      string         `json:"schedule"`
	Backup        string         `json:"backup"`
	Phase         Phase          `json:"phase"`
	FailureReason string         `json:"failureReason,omitempty"`
	Deleted       []string       `json:"deleted"`
	DeleteFailed  []string       `json:"deleteFailed,omitempty"`
	Health        ScheduleHealth `json:"health"`
}
