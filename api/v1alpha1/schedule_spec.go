package v1alpha1

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
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
	// maxRunName is the longest backup or restore name: it is a label
	// value too.
	maxRunName = 63
	// maxScheduleName leaves room for "-YYYYMMDDhhmmss" within the
	// characters of a backup name.
	maxScheduleName = maxRunName - len("-20060102150405")
)

// ScheduleSpec is a backup schedule: when to run, what each run backs up,
// and how many runs to keep. It is the body of POST /v1/schedules, and the
// argument of every scheduled run, so a run always sees the spec it was
// started with.
//
// +kubebuilder:object:generate=true
type ScheduleSpec struct {
	// Name names the schedule; a resource's is its metadata.name.
	// +optional
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
	// +optional
	Template BackupSpec    `json:"template"`
	Overlap  OverlapPolicy `json:"overlap,omitempty"`
	// CatchupWindow is how late a run missed while Temporal or the worker
	// was down may still start.
	CatchupWindow *metav1.Duration `json:"catchupWindow,omitempty"`
	// +optional
	Retention RetentionPolicy `json:"retention"`
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
		// <namespace>.<name> is the schedule of a namespace's resource.
		namespace, name, dotted := SplitRunName(s.Name)
		parts := []string{namespace}
		if dotted {
			parts = append(parts, name)
		}
		for _, part := range parts {
			for _, msg := range validation.IsDNS1123Label(part) {
				add("name %q is not a valid DNS-1123 label: %s", s.Name, msg)
			}
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
	problems = append(problems, s.Retention.ttlProblems(s.Template.TTL)...)
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
		if invalid := (*InvalidSpecError)(nil); errors.As(err, &invalid) {
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

// Zone is the time zone the schedule's calendar is read in: TimeZone
// for cron (Validate has checked it loads), UTC otherwise.
func (s ScheduleSpec) Zone() *time.Location {
	if s.TimeZone == "" || s.Every != nil {
		return time.UTC
	}
	zone, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		return time.UTC
	}
	return zone
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
