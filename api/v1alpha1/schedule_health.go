package v1alpha1

import (
	"fmt"
	"time"
)

// Health states of a schedule.
const (
	HealthHealthy  = "Healthy"
	HealthDegraded = "Degraded"
)

// RunningRun is a run of a schedule that has not ended.
type RunningRun struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
}

// ScheduleHealthInput is what a schedule's health is judged from.
type ScheduleHealthInput struct {
	Now    time.Time
	Paused bool
	// Interval is the longest gap between the schedule's next due times;
	// 0 when unknown.
	Interval       time.Duration
	MaxRunDuration time.Duration
	Created        time.Time
	LastSuccess    *time.Time
	Running        []RunningRun
}

// ScheduleHealth is a schedule's state and, when Degraded, why.
type ScheduleHealth struct {
	State   string   `json:"state"`
	Reasons []string `json:"reasons,omitempty"`
}

// EvaluateScheduleHealth reports a schedule Degraded when a run has taken
// longer than MaxRunDuration, or when its last completed backup (or, with
// none, its creation) is older than one interval plus a grace period:
// MaxRunDuration if set, else another interval. A paused schedule is not
// overdue, but a run of it can still be too long.
func EvaluateScheduleHealth(in ScheduleHealthInput) ScheduleHealth {
	var reasons []string
	if in.MaxRunDuration > 0 {
		for _, r := range in.Running {
			if took := in.Now.Sub(r.Start); took > in.MaxRunDuration {
				reasons = append(reasons, fmt.Sprintf("backup %s has run for %s, longer than maxRunDuration %s",
					r.Name, took.Round(time.Second), in.MaxRunDuration))
			}
		}
	}
	if !in.Paused && in.Interval > 0 {
		grace := in.MaxRunDuration
		if grace <= 0 {
			grace = in.Interval
		}
		due := in.Interval + grace
		switch {
		case in.LastSuccess != nil && in.Now.Sub(*in.LastSuccess) > due:
			reasons = append(reasons, fmt.Sprintf("last completed backup at %s is older than interval %s plus grace %s",
				in.LastSuccess.UTC().Format(time.RFC3339), in.Interval, grace))
		case in.LastSuccess == nil && !in.Created.IsZero() && in.Now.Sub(in.Created) > due:
			reasons = append(reasons, fmt.Sprintf("no completed backup since the schedule was created at %s (interval %s plus grace %s)",
				in.Created.UTC().Format(time.RFC3339), in.Interval, grace))
		}
	}
	if len(reasons) > 0 {
		return ScheduleHealth{State: HealthDegraded, Reasons: reasons}
	}
	return ScheduleHealth{State: HealthHealthy}
}

// LongestGap is the longest gap between consecutive times of a sorted
// list, such as a schedule's next due times; 0 with fewer than two.
func LongestGap(times []time.Time) time.Duration {
	var longest time.Duration
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap > longest {
			longest = gap
		}
	}
	return longest
}

// LastCompleted is when the newest Completed run of runs ended; nil when
// none completed.
func LastCompleted(runs []ScheduleRun) *time.Time {
	var last *time.Time
	for _, r := range runs {
		if r.Phase == PhaseCompleted && (last == nil || r.Time.After(*last)) {
			t := r.Time
			last = &t
		}
	}
	return last
}
