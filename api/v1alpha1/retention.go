package v1alpha1

import (
	"sort"
	"time"
)

// ScheduleRun is one finished run of a schedule as its location records it.
type ScheduleRun struct {
	Name string `json:"name"`
	// Phase is that of backup.json; Failed for a run that left only its
	// log (failed and canceled runs are not committed).
	Phase Phase     `json:"phase"`
	Time  time.Time `json:"time"`
	Bytes int64     `json:"bytes,omitempty"`
	// ImmutableUntil is when the run's object lock ends, if it has one.
	ImmutableUntil *time.Time `json:"immutableUntil,omitempty"`
}

func (r ScheduleRun) restorable() bool {
	return r.Phase == PhaseCompleted || r.Phase == PhasePartiallyFailed
}

// RetentionDecision says which runs of a schedule to delete.
type RetentionDecision struct {
	Delete []string `json:"delete"`
	// Protected is the newest completed run, which retention never deletes.
	Protected string `json:"protected,omitempty"`
	// Immutable are runs the policy would delete that are under object
	// lock: a later run deletes them once it ends.
	Immutable []string `json:"immutable,omitempty"`
}

// DecideRetention applies policy to the finished runs of a schedule at
// now. Restorable runs (Completed, PartiallyFailed) are kept by the
// policy's one kind; failed runs by KeepFailed; the newest Completed run
// (or, failing one, the newest restorable run) is always kept. Calendar
// rules (KeepDaily...) read run times in now's location: give now in the
// schedule's time zone.
func DecideRetention(runs []ScheduleRun, policy RetentionPolicy, now time.Time) RetentionDecision {
	sorted := append([]ScheduleRun(nil), runs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].Time.Equal(sorted[j].Time) {
			return sorted[i].Time.After(sorted[j].Time)
		}
		return sorted[i].Name > sorted[j].Name
	})
	var dec RetentionDecision
	dec.Protected = newestToProtect(sorted)
	calendar := calendarKeeps(sorted, policy, now.Location())

	keepFailed := DefaultKeepFailed
	if policy.KeepFailed != nil {
		keepFailed = *policy.KeepFailed
	}
	maxBytes := policy.maxTotalBytes()
	kept, failed, restorable := 0, 0, 0
	var keptBytes int64
	// Once one run does not fit the size, no older run is kept either:
	// retention never leaves holes in a schedule's history.
	sizeFull := false
	for _, r := range sorted {
		keep := false
		switch {
		case r.Name == dec.Protected:
			keep = true
		case !r.restorable():
			keep = failed < keepFailed
			failed++
		case policy.byCount():
			keep = calendar[r.Name] || (policy.KeepLast != nil && restorable < *policy.KeepLast)
		case maxBytes > 0:
			keep = !sizeFull && keptBytes+r.Bytes <= maxBytes
		case policy.MaxAge != nil:
			keep = now.Sub(r.Time) <= policy.MaxAge.Duration
		default:
			keep = true // no policy: keep everything
		}
		if r.restorable() {
			restorable++
			if keep {
				kept++
				keptBytes += r.Bytes
			} else {
				sizeFull = true
			}
		}
		switch {
		case keep:
		case r.ImmutableUntil != nil && now.Before(*r.ImmutableUntil):
			dec.Immutable = append(dec.Immutable, r.Name)
		default:
			dec.Delete = append(dec.Delete, r.Name)
		}
	}
	return dec
}

func newestToProtect(newestFirst []ScheduleRun) string {
	for _, r := range newestFirst {
		if r.Phase == PhaseCompleted {
			return r.Name
		}
	}
	for _, r := range newestFirst {
		if r.restorable() {
			return r.Name
		}
	}
	return ""
}
