package starter

import (
	"fmt"
	"time"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// ttlLockProblems refuses a TTL shorter than the object lock of the
// location a backup goes to: the backup could not be deleted when it
// expires, and a TTL that says otherwise misleads.
func ttlLockProblems(spec v1alpha1.BackupSpec, lock *location.Lock) []string {
	if lock == nil || spec.TTL == nil || spec.TTL.Duration >= lock.Period {
		return nil
	}
	return []string{fmt.Sprintf("ttl %s is shorter than the object lock of location %s (%s): the backup cannot be deleted before the lock ends; give a ttl of at least %s",
		spec.TTL.Duration, location.Display(spec.StorageLocation), lock, location.FormatPeriod(lock.Period))}
}

// retentionLockProblems refuses a schedule whose retention would delete
// runs still under the lock of its location: maxAge shorter than the
// lock, or keepLast runs that span less than it at the schedule's
// interval. maxTotalSize cannot be judged ahead; retention leaves locked
// runs to a later run.
func retentionLockProblems(spec v1alpha1.ScheduleSpec, lock *location.Lock, now time.Time) []string {
	if lock == nil {
		return nil
	}
	r := spec.Retention
	switch {
	case r.MaxAge != nil && r.MaxAge.Duration < lock.Period:
		return []string{fmt.Sprintf("retention.maxAge %s is shorter than the object lock of the template's location (%s)", r.MaxAge.Duration, lock)}
	case r.KeepLast != nil:
		interval := spec.Interval(now)
		if span := time.Duration(*r.KeepLast) * interval; interval > 0 && span < lock.Period {
			need := (lock.Period + interval - 1) / interval
			return []string{fmt.Sprintf("retention.keepLast %d keeps %s of runs every %s, less than the object lock of the template's location (%s): keep at least %d",
				*r.KeepLast, span, interval, lock, need)}
		}
	}
	return nil
}
