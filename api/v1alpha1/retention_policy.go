package v1alpha1

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RetentionPolicy says which runs of a schedule to keep: by count
// (KeepLast and the grandfather-father-son rules, alone or together),
// by MaxTotalSize or by MaxAge, one of the three; plus how many failed
// runs to keep. The newest completed backup of a schedule is never
// deleted.
//
// +kubebuilder:object:generate=true
type RetentionPolicy struct {
	// KeepLast keeps the newest N successful runs.
	KeepLast *int `json:"keepLast,omitempty"`
	// KeepHourly, KeepDaily, KeepWeekly, KeepMonthly and KeepYearly keep
	// the newest successful run of each of the newest N hours, days, ISO
	// weeks, months and years that have one, in the schedule's time zone
	// (UTC for every). A run is kept if any rule, or KeepLast, keeps it.
	KeepHourly  int `json:"keepHourly,omitempty"`
	KeepDaily   int `json:"keepDaily,omitempty"`
	KeepWeekly  int `json:"keepWeekly,omitempty"`
	KeepMonthly int `json:"keepMonthly,omitempty"`
	KeepYearly  int `json:"keepYearly,omitempty"`
	// MaxTotalSize keeps the newest successful runs whose tarballs add up
	// to at most this much (a Kubernetes quantity: 500Mi, 10G).
	MaxTotalSize string `json:"maxTotalSize,omitempty"`
	// MaxAge keeps successful runs younger than this.
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
	// KeepFailed is how many failed or canceled runs to keep, newest
	// first, for their logs (default 1).
	KeepFailed *int `json:"keepFailed,omitempty"`
}

// byCount reports whether the policy keeps runs by count: KeepLast or a
// grandfather-father-son rule.
func (r RetentionPolicy) byCount() bool {
	return r.KeepLast != nil || len(r.calendarRules()) > 0
}

func (r RetentionPolicy) problems() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	kinds := 0
	if r.byCount() {
		kinds++
	}
	if r.KeepLast != nil && *r.KeepLast < 1 {
		add("retention.keepLast %d must be at least 1", *r.KeepLast)
	}
	for _, rule := range calendarUnits {
		n := rule.count(r)
		switch {
		case n < 0:
			add("retention.%s %d must not be negative (0 turns it off)", rule.field, n)
		case n > rule.max:
			add("retention.%s %d is more than %d", rule.field, n, rule.max)
		}
	}
	if r.MaxTotalSize != "" {
		kinds++
		if q, err := resource.ParseQuantity(r.MaxTotalSize); err != nil {
			add("retention.maxTotalSize %q is not a size (like 500Mi or 10G): %v", r.MaxTotalSize, err)
		} else if q.Sign() <= 0 {
			add("retention.maxTotalSize %s must be positive", r.MaxTotalSize)
		}
	}
	if r.MaxAge != nil {
		kinds++
		if r.MaxAge.Duration <= 0 {
			add("retention.maxAge %s must be positive", r.MaxAge.Duration)
		}
	}
	if kinds != 1 {
		add("retention: set exactly one of keepLast, maxTotalSize, maxAge (found %d); "+
			"keepHourly, keepDaily, keepWeekly, keepMonthly and keepYearly count as keepLast, alone or with it", kinds)
	}
	if r.KeepFailed != nil && *r.KeepFailed < 0 {
		add("retention.keepFailed %d must not be negative", *r.KeepFailed)
	}
	return problems
}

// ttlProblems refuses calendar rules that the backups' own TTL would
// defeat: a run kept as one of 12 monthlies must live about a year, and
// one that expires first is gone whatever retention says.
func (r RetentionPolicy) ttlProblems(ttl *metav1.Duration) []string {
	if ttl == nil || ttl.Duration <= 0 {
		return nil
	}
	longest, span := "", ttl.Duration
	for _, rule := range r.calendarRules() {
		if need := rule.span(rule.count(r)); need > span {
			longest, span = rule.field, need
		}
	}
	if longest == "" {
		return nil
	}
	need := span.Round(time.Hour)
	if need < span {
		need += time.Hour
	}
	return []string{fmt.Sprintf("retention.%s %d keeps runs for up to %s, longer than the template's ttl of %s: give a ttl of at least %dh",
		longest, r.countOf(longest), days(span), days(ttl.Duration), int64(need/time.Hour))}
}

// days writes a span of days as days, rounded up, and anything shorter
// as Go writes durations.
func days(d time.Duration) string {
	if d < 48*time.Hour {
		return d.String()
	}
	return fmt.Sprintf("%d days", (d+day-1)/day)
}

func (r RetentionPolicy) countOf(field string) int {
	for _, rule := range calendarUnits {
		if rule.field == field {
			return rule.count(r)
		}
	}
	return 0
}

// maxTotalBytes is MaxTotalSize in bytes, 0 when unset. Validate has
// checked that it parses.
func (r RetentionPolicy) maxTotalBytes() int64 {
	if r.MaxTotalSize == "" {
		return 0
	}
	q, err := resource.ParseQuantity(r.MaxTotalSize)
	if err != nil {
		return 0
	}
	return q.Value()
}
