package v1alpha1

import (
	"fmt"
	"time"
)

// calendarUnit is one grandfather-father-son rule: runs fall into
// buckets (an hour, a day, an ISO week, a month, a year of the
// schedule's time zone) and the newest run of each of the newest N
// buckets is kept.
type calendarUnit struct {
	field string
	count func(RetentionPolicy) int
	// bucket names the bucket t falls in; t is in the schedule's zone.
	bucket func(t time.Time) string
	// length is a bucket's longest duration, for span.
	length time.Duration
	// max bounds N: more is a typo, not a policy (about ten years).
	max int
}

const day = 24 * time.Hour

var calendarUnits = []calendarUnit{
	// The offset tells apart the two 02:00 hours of a night the clocks
	// go back: each real hour is its own bucket.
	{"keepHourly", func(r RetentionPolicy) int { return r.KeepHourly },
		func(t time.Time) string { return t.Format("2006-01-02T15 -0700") }, time.Hour, 24 * 3660},
	{"keepDaily", func(r RetentionPolicy) int { return r.KeepDaily },
		func(t time.Time) string { return t.Format(time.DateOnly) }, 25 * time.Hour, 3660},
	{"keepWeekly", func(r RetentionPolicy) int { return r.KeepWeekly },
		func(t time.Time) string { y, w := t.ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }, 7*day + time.Hour, 522},
	{"keepMonthly", func(r RetentionPolicy) int { return r.KeepMonthly },
		func(t time.Time) string { return t.Format("2006-01") }, 31*day + time.Hour, 120},
	{"keepYearly", func(r RetentionPolicy) int { return r.KeepYearly },
		func(t time.Time) string { return t.Format("2006") }, 366 * day, 10},
}

// span is how long the rule may keep a run: n buckets.
func (u calendarUnit) span(n int) time.Duration { return time.Duration(n) * u.length }

// calendarRules are the rules the policy sets (N above 0).
func (r RetentionPolicy) calendarRules() []calendarUnit {
	var rules []calendarUnit
	for _, u := range calendarUnits {
		if u.count(r) > 0 {
			rules = append(rules, u)
		}
	}
	return rules
}

// calendarKeeps names the runs the policy's calendar rules keep among
// newestFirst (restorable runs only count), with bucket times read in
// zone.
func calendarKeeps(newestFirst []ScheduleRun, policy RetentionPolicy, zone *time.Location) map[string]bool {
	rules := policy.calendarRules()
	if len(rules) == 0 {
		return nil
	}
	keep := map[string]bool{}
	for _, u := range rules {
		last, buckets, limit := "", 0, u.count(policy)
		for _, r := range newestFirst {
			if !r.restorable() {
				continue
			}
			b := u.bucket(r.Time.In(zone))
			if b == last {
				continue // an older run of a bucket already kept or passed
			}
			last = b
			if buckets++; buckets > limit {
				break
			}
			keep[r.Name] = true
		}
	}
	return keep
}
