// Package schedule holds ScheduledBackup, the workflow a backup schedule
// starts: one backup as its child, then the schedule's retention and health.
package schedule
