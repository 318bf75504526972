package v1alpha1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

var retentionNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// runs returns one run per phase letter, newest last, an hour apart:
// C completed, P partially failed, F failed.
func runs(phases string, bytes int64) []ScheduleRun {
	var out []ScheduleRun
	for i, c := range phases {
		phase := map[rune]Phase{'C': PhaseCompleted, 'P': PhasePartiallyFailed, 'F': PhaseFailed}[c]
		at := retentionNow.Add(-time.Duration(len(phases)-i) * time.Hour)
		out = append(out, ScheduleRun{Name: ScheduledBackupName("s", at), Phase: phase, Time: at, Bytes: bytes})
	}
	return out
}

func names(rs []ScheduleRun, idx ...int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, rs[i].Name)
	}
	return out
}

func TestRetentionKeepLast(t *testing.T) {
	rs := runs("CCCCC", 10)
	dec := DecideRetention(rs, RetentionPolicy{KeepLast: intp(3)}, retentionNow)
	assert.ElementsMatch(t, names(rs, 0, 1), dec.Delete)
	assert.Equal(t, rs[4].Name, dec.Protected)
}

func TestRetentionKeepsNewestCompletedBeyondThePolicy(t *testing.T) {
	// The newest two are partially failed; keep-last-1 still keeps the
	// newest completed one.
	rs := runs("CCPP", 10)
	dec := DecideRetention(rs, RetentionPolicy{KeepLast: intp(1)}, retentionNow)
	assert.Equal(t, rs[1].Name, dec.Protected)
	assert.ElementsMatch(t, names(rs, 0, 2), dec.Delete)
}

func TestRetentionFailedRuns(t *testing.T) {
	rs := runs("CFCFF", 10)
	dec := DecideRetention(rs, RetentionPolicy{KeepLast: intp(5)}, retentionNow)
	assert.ElementsMatch(t, names(rs, 1, 3), dec.Delete, "default keeps the newest failed run only")
	dec = DecideRetention(rs, RetentionPolicy{KeepLast: intp(5), KeepFailed: intp(0)}, retentionNow)
	assert.ElementsMatch(t, names(rs, 1, 3, 4), dec.Delete)
}

func TestRetentionMaxTotalSize(t *testing.T) {
	rs := runs("CCCCC", 400<<20)
	dec := DecideRetention(rs, RetentionPolicy{MaxTotalSize: "1Gi"}, retentionNow)
	assert.ElementsMatch(t, names(rs, 0, 1, 2), dec.Delete, "two runs of 400Mi fit in 1Gi, a third does not")

	// A newest run bigger than the limit is kept (newest completed), and
	// then nothing older fits.
	rs = runs("CC", 2<<30)
	dec = DecideRetention(rs, RetentionPolicy{MaxTotalSize: "1Gi"}, retentionNow)
	assert.ElementsMatch(t, names(rs, 0), dec.Delete)
}

func TestRetentionMaxAge(t *testing.T) {
	rs := runs("CCCCC", 10) // 5h, 4h, 3h, 2h, 1h old
	dec := DecideRetention(rs, RetentionPolicy{MaxAge: dur(150 * time.Minute)}, retentionNow)
	assert.ElementsMatch(t, names(rs, 0, 1, 2), dec.Delete)
	// Everything too old: the newest completed run survives.
	dec = DecideRetention(rs, RetentionPolicy{MaxAge: dur(time.Minute)}, retentionNow)
	assert.ElementsMatch(t, names(rs, 0, 1, 2, 3), dec.Delete)
}

func TestRetentionNothingToDo(t *testing.T) {
	assert.Empty(t, DecideRetention(nil, RetentionPolicy{KeepLast: intp(1)}, retentionNow).Delete)
	assert.Empty(t, DecideRetention(runs("F", 0), RetentionPolicy{KeepLast: intp(1)}, retentionNow).Delete)
}

// TestRetentionLeavesImmutableRunsForLater: a run the policy would
// delete whose object lock has not ended is kept, and named; once the
// lock ends, it is deleted.
func TestRetentionLeavesImmutableRunsForLater(t *testing.T) {
	rs := runs("CCCCC", 10)
	locked := retentionNow.Add(time.Hour)
	rs[1].ImmutableUntil = &locked
	dec := DecideRetention(rs, RetentionPolicy{KeepLast: intp(3)}, retentionNow)
	assert.Equal(t, names(rs, 0), dec.Delete)
	assert.Equal(t, names(rs, 1), dec.Immutable)

	dec = DecideRetention(rs, RetentionPolicy{KeepLast: intp(3)}, locked.Add(time.Second))
	assert.ElementsMatch(t, names(rs, 0, 1), dec.Delete)
	assert.Empty(t, dec.Immutable)
}
