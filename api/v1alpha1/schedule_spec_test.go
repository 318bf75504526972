package v1alpha1

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func intp(n int) *int { return &n }

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func validSchedule() ScheduleSpec {
	return ScheduleSpec{Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Berlin",
		Retention: RetentionPolicy{KeepLast: intp(7)}}.WithDefaults("file:///tmp/loc")
}

func TestScheduleSpecValid(t *testing.T) {
	require.NoError(t, validSchedule().Validate())
	gfs := validSchedule()
	gfs.Retention = RetentionPolicy{KeepDaily: 7, KeepWeekly: 4}
	require.NoError(t, gfs.Validate(), "calendar rules alone, within the default ttl")
	gfs.Retention = RetentionPolicy{KeepLast: intp(3), KeepMonthly: 12, KeepYearly: 2}
	gfs.Template.TTL = dur(3 * 366 * 24 * time.Hour)
	require.NoError(t, gfs.Validate(), "with keepLast, and a ttl that outlives the yearlies")
	every := ScheduleSpec{Name: "often", Every: dur(5 * time.Second), Retention: RetentionPolicy{MaxAge: dur(time.Hour)}}
	require.NoError(t, every.WithDefaults("file:///tmp/loc").Validate())
	assert.Equal(t, OverlapSkip, every.WithDefaults("x").Overlap)
	assert.Equal(t, DefaultKeepFailed, *every.WithDefaults("x").Retention.KeepFailed)
}

// TestScheduleSpecBadInput: each bad field is named, and all problems of
// one request come back together.
func TestScheduleSpecBadInput(t *testing.T) {
	cases := map[string]struct {
		edit func(*ScheduleSpec)
		want []string
	}{
		"invalid cron":        {func(s *ScheduleSpec) { s.Cron = "61 * * * *" }, []string{`cron "61 * * * *" is invalid`}},
		"unknown time zone":   {func(s *ScheduleSpec) { s.TimeZone = "Mars/Olympus" }, []string{`timeZone "Mars/Olympus"`}},
		"zone inside cron":    {func(s *ScheduleSpec) { s.Cron = "CRON_TZ=UTC 0 2 * * *" }, []string{"give the time zone in timeZone"}},
		"no timing":           {func(s *ScheduleSpec) { s.Cron = "" }, []string{"one of cron and every is required"}},
		"cron and every":      {func(s *ScheduleSpec) { s.Every = dur(time.Hour) }, []string{"cron and every are exclusive"}},
		"two retention kinds": {func(s *ScheduleSpec) { s.Retention.MaxAge = dur(time.Hour) }, []string{"exactly one of keepLast, maxTotalSize, maxAge (found 2)"}},
		"no retention":        {func(s *ScheduleSpec) { s.Retention.KeepLast = nil }, []string{"(found 0)"}},
		"negative keepLast":   {func(s *ScheduleSpec) { s.Retention.KeepLast = intp(-1) }, []string{"keepLast -1 must be at least 1"}},
		"negative keepFailed": {func(s *ScheduleSpec) { s.Retention.KeepFailed = intp(-2) }, []string{"keepFailed -2 must not be negative"}},
		"bad size": {func(s *ScheduleSpec) {
			s.Retention.KeepLast = nil
			s.Retention.MaxTotalSize = "lots"
		}, []string{`maxTotalSize "lots" is not a size`}},
		"negative calendar rule": {func(s *ScheduleSpec) { s.Retention.KeepDaily = -1 }, []string{"keepDaily -1 must not be negative"}},
		"absurd calendar rule":   {func(s *ScheduleSpec) { s.Retention.KeepYearly = 1000 }, []string{"keepYearly 1000 is more than 10"}},
		"calendar rule and age": {func(s *ScheduleSpec) {
			s.Retention.KeepLast = nil
			s.Retention.KeepWeekly = 4
			s.Retention.MaxAge = dur(time.Hour)
		}, []string{"(found 2)"}},
		"ttl shorter than the monthlies": {func(s *ScheduleSpec) { s.Retention.KeepMonthly = 12 }, []string{
			"retention.keepMonthly 12 keeps runs for up to 373 days, longer than the template's ttl of 30 days: give a ttl of at least 8940h"}},
		"bad name":         {func(s *ScheduleSpec) { s.Name = "Nightly_Backup" }, []string{"not a valid DNS-1123 label"}},
		"long name":        {func(s *ScheduleSpec) { s.Name = strings.Repeat("a", 49) }, []string{"longer than 48 characters"}},
		"overlap":          {func(s *ScheduleSpec) { s.Overlap = "queue" }, []string{`overlap "queue" must be one of`}},
		"short catch-up":   {func(s *ScheduleSpec) { s.CatchupWindow = dur(time.Second) }, []string{"catchupWindow 1s must be at least 10s"}},
		"negative jitter":  {func(s *ScheduleSpec) { s.Jitter = dur(-time.Second) }, []string{"jitter -1s must not be negative"}},
		"template name":    {func(s *ScheduleSpec) { s.Template.Name = "x" }, []string{"template.name must be empty"}},
		"template filters": {func(s *ScheduleSpec) { s.Template.ClusterResources = "some" }, []string{"template: clusterResources"}},
		"several at once": {func(s *ScheduleSpec) {
			s.Cron = "bogus"
			s.Retention.KeepLast = intp(0)
		}, []string{"cron \"bogus\"", "keepLast 0"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := validSchedule()
			tc.edit(&s)
			err := s.Validate()
			require.Error(t, err)
			var invalid *InvalidSpecError
			require.ErrorAs(t, err, &invalid)
			assert.Equal(t, "schedule", invalid.What)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestScheduledBackupNames(t *testing.T) {
	due := time.Date(2026, 11, 22, 2, 0, 5, 0, time.FixedZone("CET", 3600))
	name := ScheduledBackupName("nightly", due)
	assert.Equal(t, "nightly-20261122010005", name)
	got, ok := ScheduledRunTime("nightly", name)
	require.True(t, ok)
	assert.True(t, got.Equal(due))
	for _, other := range []string{"nightly-x-20261122010005", "nightly-2026", "nightly", "daily-20261122010005"} {
		_, ok := ScheduledRunTime("nightly", other)
		assert.False(t, ok, other)
	}
	id, ok := ScheduleNameOf(ScheduleID("nightly"))
	assert.True(t, ok)
	assert.Equal(t, "nightly", id)
	_, ok = ScheduleNameOf(ExpireScheduleID)
	assert.False(t, ok)
}

func TestScheduleInterval(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s := validSchedule()
	assert.Equal(t, 24*time.Hour, s.Interval(now))
	s.Cron = "0 2 * * 1-5" // weekdays: the weekend is the longest gap
	assert.Equal(t, 72*time.Hour, s.Interval(now))
	assert.Equal(t, time.Minute, ScheduleSpec{Every: dur(time.Minute)}.Interval(now))
}
