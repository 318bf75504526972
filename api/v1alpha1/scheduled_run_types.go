package v1alpha1

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
	Schedule      string `json:"schedule"`
	Backup        string `json:"backup"`
	Phase         Phase  `json:"phase"`
	FailureReason string `json:"failureReason,omitempty"`
	// Deleted names the runs retention deleted, the first
	// MaxReportedDeletions of DeletedTotal.
	Deleted      []string       `json:"deleted"`
	DeletedTotal int            `json:"deletedTotal"`
	DeleteFailed []string       `json:"deleteFailed,omitempty"`
	Health       ScheduleHealth `json:"health"`
}

// DefaultRetentionPage is how many runs one ApplyRetention run deletes
// before it continues as new.
const DefaultRetentionPage = 50

// MaxReportedDeletions bounds the names a retention result carries;
// DeletedTotal counts them all.
const MaxReportedDeletions = 100

// RetentionRequest applies a schedule's retention as it stood at Now.
// Deleted and DeletedTotal carry what earlier pages did across
// continue-as-new.
type RetentionRequest struct {
	Schedule     ScheduleSpec `json:"schedule"`
	Now          time.Time    `json:"now"`
	Limit        int          `json:"limit,omitempty"`
	Deleted      []string     `json:"deleted,omitempty"`
	DeletedTotal int          `json:"deletedTotal,omitempty"`
}

// RetentionPageInput asks for the next page of runs to delete.
type RetentionPageInput struct {
	Schedule ScheduleSpec `json:"schedule"`
	Now      time.Time    `json:"now"`
	Limit    int          `json:"limit"`
}

// RetentionPage is one page of a retention decision, with what the
// schedule's health needs, so that neither grows with the number of runs.
type RetentionPage struct {
	Delete []string `json:"delete"`
	// More is how many more runs the decision deletes after this page.
	More        int           `json:"more,omitempty"`
	Protected   string        `json:"protected,omitempty"`
	Immutable   int           `json:"immutable,omitempty"`
	Interval    time.Duration `json:"interval"`
	LastSuccess *time.Time    `json:"lastSuccess,omitempty"`
}

// RetentionResult is what a schedule's retention did.
type RetentionResult struct {
	Deleted      []string      `json:"deleted"`
	DeletedTotal int           `json:"deletedTotal"`
	DeleteFailed []string      `json:"deleteFailed,omitempty"`
	Interval     time.Duration `json:"interval"`
	LastSuccess  *time.Time    `json:"lastSuccess,omitempty"`
}

// PageRetention is the page of listed's runs that retention deletes at
// in.Now: the first in.Limit, with how many more, and what the schedule's
// health needs.
func PageRetention(listed ScheduleRunsResult, in RetentionPageInput) *RetentionPage {
	dec := DecideRetention(listed.Runs, in.Schedule.Retention, in.Now.In(in.Schedule.Zone()))
	page := &RetentionPage{Delete: dec.Delete, Protected: dec.Protected, Immutable: len(dec.Immutable),
		Interval: listed.Interval, LastSuccess: LastCompleted(listed.Runs)}
	if in.Limit > 0 && len(page.Delete) > in.Limit {
		page.More = len(page.Delete) - in.Limit
		page.Delete = page.Delete[:in.Limit]
	}
	if page.Delete == nil {
		page.Delete = []string{}
	}
	return page
}
