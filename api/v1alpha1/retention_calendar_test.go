package v1alpha1

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	zone, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	return zone
}

func completedAt(times ...time.Time) []ScheduleRun {
	var out []ScheduleRun
	for _, at := range times {
		out = append(out, ScheduleRun{Name: ScheduledBackupName("s", at), Phase: PhaseCompleted, Time: at.UTC()})
	}
	return out
}

// kept is what DecideRetention leaves of rs.
func kept(rs []ScheduleRun, dec RetentionDecision) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(dec.Delete, r.Name) {
			out = append(out, r.Name)
		}
	}
	sort.Strings(out)
	return out
}

func TestCalendarRulesKeepTheNewestRunOfEachBucket(t *testing.T) {
	zone := berlin(t)
	at := func(month time.Month, d, h, m int) time.Time { return time.Date(2026, month, d, h, m, 0, 0, zone) }
	rs := completedAt(
		at(2, 27, 9, 0),                                    // February's last
		at(3, 2, 10, 0), at(3, 2, 10, 30), at(3, 2, 11, 0), // Monday of week 10
		at(3, 3, 9, 0),
		at(3, 8, 22, 0), // Sunday: week 10's last
		at(3, 9, 8, 0),  // Monday of week 11
	)
	now := at(3, 9, 12, 0)
	for name, tc := range map[string]struct {
		policy RetentionPolicy
		want   []int
	}{
		"two days":                   {RetentionPolicy{KeepDaily: 2}, []int{5, 6}},
		"a day and two weeks":        {RetentionPolicy{KeepDaily: 1, KeepWeekly: 2}, []int{5, 6}},
		"three weeks":                {RetentionPolicy{KeepWeekly: 3}, []int{0, 5, 6}},
		"two months":                 {RetentionPolicy{KeepMonthly: 2}, []int{0, 6}},
		"three hours of two seen":    {RetentionPolicy{KeepHourly: 3}, []int{4, 5, 6}},
		"last two and a month":       {RetentionPolicy{KeepLast: intp(2), KeepMonthly: 2}, []int{0, 5, 6}},
		"a year keeps the newest":    {RetentionPolicy{KeepYearly: 1}, []int{6}},
		"days beyond the runs there": {RetentionPolicy{KeepDaily: 30}, []int{0, 3, 4, 5, 6}},
	} {
		dec := DecideRetention(rs, tc.policy, now)
		var want []string
		for _, i := range tc.want {
			want = append(want, rs[i].Name)
		}
		sort.Strings(want)
		assert.Equal(t, want, kept(rs, dec), name)
	}
}

// The zone decides the buckets: Sunday 23:30 UTC is Monday in Berlin.
func TestCalendarRulesReadTheSchedulesZone(t *testing.T) {
	sunday := time.Date(2026, 3, 8, 23, 30, 0, 0, time.UTC)
	rs := completedAt(sunday.Add(-24*time.Hour), sunday, sunday.Add(2*time.Hour))
	policy := RetentionPolicy{KeepWeekly: 2}
	assert.Equal(t, []string{rs[1].Name, rs[2].Name}, kept(rs, DecideRetention(rs, policy, sunday.Add(3*time.Hour))),
		"in UTC, Sunday ends week 10")
	assert.Equal(t, []string{rs[0].Name, rs[2].Name}, kept(rs, DecideRetention(rs, policy, sunday.Add(3*time.Hour).In(berlin(t)))),
		"in Berlin, Sunday 23:30 UTC is already week 11")
}

// The night the clocks go back has two 02:00 hours, each its own bucket;
// the night they go forward has no 02:00 at all.
func TestCalendarHoursAcrossDaylightSavingChanges(t *testing.T) {
	zone := berlin(t)
	back := time.Date(2026, 10, 25, 0, 10, 0, 0, time.UTC) // 02:10 CEST, then 02:10 CET an hour later
	rs := completedAt(back, back.Add(40*time.Minute), back.Add(time.Hour), back.Add(100*time.Minute))
	require.Equal(t, rs[0].Time.In(zone).Hour(), rs[2].Time.In(zone).Hour(), "the same wall-clock hour, twice")
	assert.Equal(t, []string{rs[1].Name, rs[3].Name}, kept(rs, DecideRetention(rs, RetentionPolicy{KeepHourly: 2}, back.Add(2*time.Hour).In(zone))))

	forward := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC) // 01:30 CET, then 03:30 CEST
	rs = completedAt(forward, forward.Add(20*time.Minute), forward.Add(time.Hour))
	assert.Equal(t, []string{rs[1].Name, rs[2].Name}, kept(rs, DecideRetention(rs, RetentionPolicy{KeepHourly: 5}, forward.Add(2*time.Hour).In(zone))))
}

// expectedCalendar is an independent reading of the policy over every
// run ever made: bucket by calendar fields, the newest run of each of the
// newest N buckets, the newest keepLast runs, the newest completed run,
// the newest keepFailed failed runs.
func expectedCalendar(all []ScheduleRun, p RetentionPolicy, zone *time.Location) []string {
	type rule struct {
		n   int
		key func(time.Time) [3]int
	}
	rules := []rule{
		{p.KeepHourly, func(t time.Time) [3]int {
			_, off := t.Zone()
			return [3]int{t.YearDay() + 1000*t.Year(), t.Hour(), off}
		}},
		{p.KeepDaily, func(t time.Time) [3]int { return [3]int{t.Year(), t.YearDay(), 0} }},
		{p.KeepWeekly, func(t time.Time) [3]int { y, w := t.ISOWeek(); return [3]int{y, w, 0} }},
		{p.KeepMonthly, func(t time.Time) [3]int { return [3]int{t.Year(), int(t.Month()), 0} }},
		{p.KeepYearly, func(t time.Time) [3]int { return [3]int{t.Year(), 0, 0} }},
	}
	keep := map[string]bool{}
	var good, failed []ScheduleRun
	for _, r := range all {
		if r.Phase == PhaseFailed {
			failed = append(failed, r)
		} else {
			good = append(good, r)
		}
	}
	for _, rl := range rules {
		newest := map[[3]int]ScheduleRun{}
		for _, r := range good {
			k := rl.key(r.Time.In(zone))
			if cur, ok := newest[k]; !ok || r.Time.After(cur.Time) {
				newest[k] = r
			}
		}
		var heads []ScheduleRun
		for _, r := range newest {
			heads = append(heads, r)
		}
		sort.Slice(heads, func(i, j int) bool { return heads[i].Time.After(heads[j].Time) })
		for i := 0; i < rl.n && i < len(heads); i++ {
			keep[heads[i].Name] = true
		}
	}
	sort.Slice(good, func(i, j int) bool { return good[i].Time.After(good[j].Time) })
	for i := 0; p.KeepLast != nil && i < *p.KeepLast && i < len(good); i++ {
		keep[good[i].Name] = true
	}
	if len(good) > 0 {
		keep[good[0].Name] = true
	}
	sort.Slice(failed, func(i, j int) bool { return failed[i].Time.After(failed[j].Time) })
	for i := 0; i < *p.KeepFailed && i < len(failed); i++ {
		keep[failed[i].Name] = true
	}
	var out []string
	for name := range keep {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Two years of hourly runs, retention applied after each as a schedule
// does, across four clock changes: what stays is exactly the policy read
// over every run ever made, and never more than the rules can keep.
func TestCalendarRetentionOverTwoYearsOfHourlyRuns(t *testing.T) {
	zone := berlin(t)
	policy := RetentionPolicy{KeepLast: intp(3), KeepHourly: 24, KeepDaily: 7, KeepWeekly: 4, KeepMonthly: 12, KeepYearly: 2, KeepFailed: intp(2)}
	bound := 3 + 24 + 7 + 4 + 12 + 2 + 2 + 1
	start := time.Date(2025, 1, 1, 0, 17, 0, 0, zone)
	var all, present []ScheduleRun
	for i := range 2 * 365 * 24 {
		at := start.Add(time.Duration(i) * time.Hour)
		run := ScheduleRun{Name: fmt.Sprintf("s-%06d", i), Phase: PhaseCompleted, Time: at.UTC()}
		if i%97 == 0 {
			run.Phase = PhaseFailed
		}
		all = append(all, run)
		present = append(present, run)
		dec := DecideRetention(present, policy, at.Add(10*time.Minute).In(zone))
		present = slices.DeleteFunc(present, func(r ScheduleRun) bool { return slices.Contains(dec.Delete, r.Name) })
		require.LessOrEqual(t, len(present), bound, "run %d", i)
	}
	var names []string
	for _, r := range present {
		names = append(names, r.Name)
	}
	sort.Strings(names)
	assert.Equal(t, expectedCalendar(all, policy, zone), names)
}
