package workflows

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// OverlapPolicy says what a schedule does when a run is due while the
// previous one is still going.
type OverlapPolicy string

const (
	// OverlapSkip drops the due run (the default: one backup at a time).
	OverlapSkip OverlapPolicy = "skip"
	// OverlapBufferOne starts the due run as soon as the running one ends;
	// further due runs meanwhile are dropped.
	OverlapBufferOne OverlapPolicy = "buffer-one"
	// OverlapAllowAll starts every due run at once.
	OverlapAllowAll OverlapPolicy = "allow-all"
)

// Defaults of a schedule.
const (
	DefaultCatchupWindow = time.Hour
	DefaultKeepFailed    = 1
	// minCatchupWindow is the shortest window Temporal accepts.
	minCatchupWindow = 10 * time.Second
	// maxScheduleName leaves room for "-YYYYMMDDhhmmss" within the 63
	// characters of a backup name.
	maxScheduleName = 63 - len("-20060102150405")
)

// ScheduleSpec is a backup schedule: when to run, what each run backs up,
// and how many runs to keep. It is the body of POST /v1/schedules, and the
// argument of every scheduled run, so a run always sees the spec it was
// started with.
type ScheduleSpec struct {
	Name string `json:"name"`
	// Kind is what each run takes: "backup" (the default) or
	// "etcd-snapshot", which uses only the template's location and TTL.
	Kind string `json:"kind,omitempty"`
	// Cron is a five-field cron expression or a descriptor (@daily,
	// @every 6h). Exactly one of Cron and Every is set.
	Cron string `json:"cron,omitempty"`
	// Every runs the schedule at a fixed interval, counted from the epoch.
	Every *metav1.Duration `json:"every,omitempty"`
	// TimeZone is the IANA zone Cron is read in (default UTC).
	TimeZone string `json:"timeZone,omitempty"`
	// Jitter delays each run by a random duration up to this, so many
	// schedules on the same minute do not start together.
	Jitter *metav1.Duration `json:"jitter,omitempty"`
	// Template is the spec of every run; its name is set per run to
	// <schedule>-<UTC time, YYYYMMDDhhmmss>.
	Template BackupSpec    `json:"template"`
	Overlap  OverlapPolicy `json:"overlap,omitempty"`
	// CatchupWindow is how late a run missed while Temporal or the worker
	// was down may still start.
	CatchupWindow *metav1.Duration `json:"catchupWindow,omitempty"`
	Retention     RetentionPolicy  `json:"retention"`
	// MaxRunDuration, when set, marks the schedule Degraded while a run
	// takes longer, and widens the grace before a schedule with no recent
	// success counts as overdue.
	MaxRunDuration *metav1.Duration `json:"maxRunDuration,omitempty"`
	// Paused creates the schedule paused.
	Paused bool `json:"paused,omitempty"`
	// BackupOptions are the run options of every backup (page size,
	// concurrency, timeouts).
	BackupOptions BackupOptions `json:"backupOptions,omitempty"`
}

// RetentionPolicy says which runs of a schedule to keep: exactly one of
// KeepLast, MaxTotalSize and MaxAge, plus how many failed runs to keep.
// The newest completed backup of a schedule is never deleted.
type RetentionPolicy struct {
	// KeepLast keeps the newest N successful runs.
	KeepLast *int `json:"keepLast,omitempty"`
	// MaxTotalSize keeps the newest successful runs whose tarballs add up
	// to at most this much (a Kubernetes quantity: 500Mi, 10G).
	MaxTotalSize string `json:"maxTotalSize,omitempty"`
	// MaxAge keeps successful runs younger than this.
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
	// KeepFailed is how many failed or canceled runs to keep, newest
	// first, for their logs (default 1).
	KeepFailed *int `json:"keepFailed,omitempty"`
}

// WithDefaults fills the fields a user may leave out; the template gets
// the backup defaults, so every run stores the same resolved spec.
func (s ScheduleSpec) WithDefaults(defaultLocation string) ScheduleSpec {
	s.Template = s.Template.WithDefaults(defaultLocation)
	if s.Kind == "" {
		s.Kind = KindBackup
	}
	if s.Overlap == "" {
		s.Overlap = OverlapSkip
	}
	if s.CatchupWindow == nil {
		s.CatchupWindow = &metav1.Duration{Duration: DefaultCatchupWindow}
	}
	if s.TimeZone == "" && s.Cron != "" {
		s.TimeZone = "UTC"
	}
	if s.Retention.KeepFailed == nil {
		keep := DefaultKeepFailed
		s.Retention.KeepFailed = &keep
	}
	return s
}

// Validate checks everything about a schedule that can be checked without
// Temporal or a cluster, and returns every problem at once.
func (s ScheduleSpec) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	switch {
	case s.Name == "":
		add("name is required")
	case len(s.Name) > maxScheduleName:
		add("name %q is longer than %d characters (runs are named <name>-YYYYMMDDhhmmss)", s.Name, maxScheduleName)
	default:
		for _, msg := range validation.IsDNS1123Label(s.Name) {
			add("name %q is not a valid DNS-1123 label: %s", s.Name, msg)
		}
	}
	problems = append(problems, s.whenProblems()...)
	switch s.Kind {
	case "", KindBackup, KindEtcdSnapshot:
	default:
		add("kind %q must be backup or etcd-snapshot", s.Kind)
	}
	switch s.Overlap {
	case "", OverlapSkip, OverlapBufferOne, OverlapAllowAll:
	default:
		add("overlap %q must be one of skip, buffer-one, allow-all", s.Overlap)
	}
	if s.CatchupWindow != nil && s.CatchupWindow.Duration < minCatchupWindow {
		add("catchupWindow %s must be at least %s", s.CatchupWindow.Duration, minCatchupWindow)
	}
	if s.MaxRunDuration != nil && s.MaxRunDuration.Duration <= 0 {
		add("maxRunDuration %s must be positive", s.MaxRunDuration.Duration)
	}
	problems = append(problems, s.Retention.problems()...)
	for _, p := range s.BackupOptions.Problems() {
		add("backupOptions.%s", strings.TrimPrefix(p, "options."))
	}
	if s.Template.Name != "" {
		add("template.name must be empty: each run is named <schedule>-<time>")
	}
	if s.Template.Schedule != "" {
		add("template.schedule must be empty: cairn sets it on each run")
	}
	template := s.Template
	template.Name = ScheduledBackupName(s.nameOrPlaceholder(), time.Unix(0, 0))
	if err := template.Validate(); err != nil {
		if invalid, ok := err.(*InvalidSpecError); ok {
			for _, p := range invalid.Problems {
				add("template: %s", p)
			}
		}
	}
	if len(problems) > 0 {
		return &InvalidSpecError{What: "schedule", Problems: problems}
	}
	return nil
}

// RunKind is the kind of run the schedule starts: KindBackup or
// KindEtcdSnapshot.
func (s ScheduleSpec) RunKind() string {
	if s.Kind == KindEtcdSnapshot {
		return KindEtcdSnapshot
	}
	return KindBackup
}

func (s ScheduleSpec) nameOrPlaceholder() string {
	if s.Name == "" || len(s.Name) > maxScheduleName {
		return "schedule"
	}
	return s.Name
}

// whenProblems checks the timing fields: one of cron or every, a zone
// Go knows, no negative jitter.
func (s ScheduleSpec) whenProblems() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case s.Cron == "" && s.Every == nil:
		add("one of cron and every is required")
	case s.Cron != "" && s.Every != nil:
		add("cron and every are exclusive; set one")
	case strings.HasPrefix(s.Cron, "CRON_TZ=") || strings.HasPrefix(s.Cron, "TZ="):
		add("cron %q: give the time zone in timeZone, not in the expression", s.Cron)
	case s.Cron != "":
		if _, err := cron.ParseStandard(s.Cron); err != nil {
			add("cron %q is invalid: %v", s.Cron, err)
		}
	case s.Every.Duration < time.Second:
		add("every %s must be at least 1s", s.Every.Duration)
	}
	if s.TimeZone != "" {
		if s.Every != nil {
			add("timeZone applies to cron only")
		} else if _, err := time.LoadLocation(s.TimeZone); err != nil {
			add("timeZone %q is not a known IANA time zone", s.TimeZone)
		}
	}
	if s.Jitter != nil && s.Jitter.Duration < 0 {
		add("jitter %s must not be negative", s.Jitter.Duration)
	}
	return problems
}

func (r RetentionPolicy) problems() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	kinds := 0
	if r.KeepLast != nil {
		kinds++
		if *r.KeepLast < 1 {
			add("retention.keepLast %d must be at least 1", *r.KeepLast)
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
		add("retention: set exactly one of keepLast, maxTotalSize, maxAge (found %d)", kinds)
	}
	if r.KeepFailed != nil && *r.KeepFailed < 0 {
		add("retention.keepFailed %d must not be negative", *r.KeepFailed)
	}
	return problems
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

// scheduledNameLayout is the time part of a scheduled backup's name.
const scheduledNameLayout = "20060102150405"

// ScheduledBackupName names the run of schedule due at t.
func ScheduledBackupName(schedule string, t time.Time) string {
	return schedule + "-" + t.UTC().Format(scheduledNameLayout)
}

// ScheduledRunTime returns the due time encoded in the name of a run of
// schedule, and whether name is one.
func ScheduledRunTime(schedule, name string) (time.Time, bool) {
	prefix := schedule + "-"
	if len(name) != len(prefix)+len(scheduledNameLayout) || name[:len(prefix)] != prefix {
		return time.Time{}, false
	}
	t, err := time.Parse(scheduledNameLayout, name[len(prefix):])
	return t, err == nil
}

// Interval is the longest gap between the next few due times of the
// schedule after now: its period for "every" and regular cron
// expressions, the longest wait for irregular ones (weekdays only).
func (s ScheduleSpec) Interval(now time.Time) time.Duration {
	if s.Every != nil {
		return s.Every.Duration
	}
	expr := s.Cron
	if s.TimeZone != "" {
		expr = "CRON_TZ=" + s.TimeZone + " " + expr
	}
	sched, err := cron.ParseStandard(expr)
	if err != nil {
		return 0
	}
	times := []time.Time{sched.Next(now)}
	for range 8 {
		times = append(times, sched.Next(times[len(times)-1]))
	}
	return LongestGap(times)
}
