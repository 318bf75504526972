package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// scheduleFlags are the flags of schedule create and update. Plain fields
// are bound straight into spec; the optional ones (pointers in the spec)
// go through apply, which sets only what was given.
type scheduleFlags struct {
	spec             v1alpha1.ScheduleSpec
	overlap          string
	clusterResources string
	every, jitter    time.Duration
	catchupWindow    time.Duration
	maxRunDuration   time.Duration
	maxAge, ttl      time.Duration
	keepLast         int
	calendar         v1alpha1.RetentionPolicy // keep-hourly ... keep-yearly
	keepFailed       int
	pageSize         int
	concurrency      int
	volumes          volumeFlags
	related          relatedFlag
}

func (sf *scheduleFlags) register(f *pflag.FlagSet) {
	s := &sf.spec
	f.StringVar(&s.Kind, "kind", "backup", "what each run takes: backup, or etcd-snapshot (uses only --ttl and --storage-location)")
	f.StringVar(&s.Cron, "cron", "", `when to run: five cron fields ("0 2 * * *") or a descriptor (@daily, @hourly)`)
	f.DurationVar(&sf.every, "every", 0, "run at this fixed interval instead of --cron (e.g. 6h)")
	f.StringVar(&s.TimeZone, "time-zone", "", "IANA time zone --cron is read in (default UTC), e.g. Europe/Berlin")
	f.DurationVar(&sf.jitter, "jitter", 0, "delay each run by a random duration up to this")
	f.StringVar(&sf.overlap, "overlap", "skip", "when a run is due while one is going: skip, buffer-one or allow-all")
	f.DurationVar(&sf.catchupWindow, "catchup-window", v1alpha1.DefaultCatchupWindow, "how late a run missed during an outage may still start")
	f.DurationVar(&sf.maxRunDuration, "max-run-duration", 0, "report the schedule Degraded when a run takes longer than this")
	f.IntVar(&sf.keepLast, "keep-last", 0, "retention: keep the newest N successful backups")
	f.IntVar(&sf.calendar.KeepHourly, "keep-hourly", 0, "retention: keep the newest backup of each of the last N hours that have one")
	f.IntVar(&sf.calendar.KeepDaily, "keep-daily", 0, "retention: keep the newest backup of each of the last N days that have one")
	f.IntVar(&sf.calendar.KeepWeekly, "keep-weekly", 0, "retention: keep the newest backup of each of the last N ISO weeks that have one")
	f.IntVar(&sf.calendar.KeepMonthly, "keep-monthly", 0, "retention: keep the newest backup of each of the last N months that have one")
	f.IntVar(&sf.calendar.KeepYearly, "keep-yearly", 0, "retention: keep the newest backup of each of the last N years that have one")
	f.StringVar(&s.Retention.MaxTotalSize, "max-total-size", "", "retention: keep the newest backups up to this total size (500Mi, 10G)")
	f.DurationVar(&sf.maxAge, "max-age", 0, "retention: keep backups younger than this (e.g. 720h)")
	f.IntVar(&sf.keepFailed, "keep-failed", v1alpha1.DefaultKeepFailed, "how many failed or canceled runs to keep, for their logs")
	f.BoolVar(&s.Paused, "paused", false, "create the schedule paused")

	t := &s.Template
	f.StringSliceVar(&t.IncludedNamespaces, "include-namespaces", nil, "namespaces to back up, globs allowed (default: all)")
	f.StringSliceVar(&t.ExcludedNamespaces, "exclude-namespaces", nil, "namespaces to leave out, globs allowed")
	f.StringSliceVar(&t.IncludedResources, "include-resources", nil, "resource types to back up, globs allowed (default: all)")
	f.StringSliceVar(&t.ExcludedResources, "exclude-resources", nil, "resource types to leave out, globs allowed")
	f.StringVar(&sf.clusterResources, "cluster-resources", "auto", "cluster-scoped objects: auto, include or exclude")
	f.StringVarP(&t.LabelSelector, "selector", "l", "", "only objects with these labels (e.g. app=shop,tier!=cache)")
	f.StringArrayVar(&t.OrLabelSelectors, "or-selector", nil, "objects matching any of these selectors (repeat the flag)")
	f.DurationVar(&sf.ttl, "ttl", v1alpha1.DefaultTTL, "how long each backup is kept, whatever the retention")
	f.StringVar(&t.StorageLocation, "storage-location", "", "backup location URL (default: --location)")
	f.IntVar(&sf.pageSize, "page-size", 0, "objects per LIST page (default 500)")
	f.IntVar(&sf.concurrency, "concurrency", 0, "resource types collected at once (default 4)")
	sf.related.register(f)
	sf.volumes.register(f, t, &s.BackupOptions)
}

// apply moves the given optional flags into spec. Giving one retention
// kind replaces the other kinds, and --cron and --every replace each
// other, so an update needs only the flags that change.
func (sf *scheduleFlags) apply(changed func(string) bool) error {
	s := &sf.spec
	byCount := changed("keep-last")
	for _, name := range calendarFlags {
		byCount = byCount || changed(name)
	}
	kinds := 0
	for _, given := range []bool{byCount, changed("max-total-size"), changed("max-age")} {
		if given {
			kinds++
		}
	}
	if kinds > 1 {
		return &usageError{fmt.Errorf("give one retention kind: --keep-last and --keep-hourly ... --keep-yearly, --max-total-size or --max-age")}
	}
	if changed("cron") && changed("every") {
		return &usageError{fmt.Errorf("--cron and --every are exclusive")}
	}
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	if changed("every") {
		s.Every, s.Cron, s.TimeZone = d(sf.every), "", ""
	}
	if changed("cron") {
		s.Every = nil
	}
	if changed("jitter") {
		s.Jitter = d(sf.jitter)
	}
	if changed("overlap") || s.Overlap == "" {
		s.Overlap = v1alpha1.OverlapPolicy(sf.overlap)
	}
	if changed("catchup-window") {
		s.CatchupWindow = d(sf.catchupWindow)
	}
	if changed("max-run-duration") {
		s.MaxRunDuration = d(sf.maxRunDuration)
		if sf.maxRunDuration == 0 {
			s.MaxRunDuration = nil // 0 turns it off
		}
	}
	r := &s.Retention
	switch {
	case byCount:
		r.MaxTotalSize, r.MaxAge = "", nil
		if changed("keep-last") {
			keep := sf.keepLast
			r.KeepLast = &keep
		}
		sf.applyCalendar(changed)
	case changed("max-total-size"):
		r.KeepLast, r.MaxAge = nil, nil
		sf.clearCalendar()
	case changed("max-age"):
		r.KeepLast, r.MaxTotalSize, r.MaxAge = nil, "", d(sf.maxAge)
		sf.clearCalendar()
	}
	if changed("keep-failed") {
		keep := sf.keepFailed
		r.KeepFailed = &keep
	}
	if changed("cluster-resources") || s.Template.ClusterResources == "" {
		s.Template.ClusterResources = v1alpha1.ClusterResources(sf.clusterResources)
	}
	if changed("ttl") {
		s.Template.TTL = d(sf.ttl)
	}
	if changed("page-size") {
		s.BackupOptions.PageSize = sf.pageSize
	}
	if changed("concurrency") {
		s.BackupOptions.Concurrency = sf.concurrency
	}
	sf.related.apply(changed, &s.Template)
	return sf.volumes.apply(changed, &s.Template)
}

// overlay applies the flags given on cmd to base, leaving the rest of
// base as it is: the flags are registered again on a flag set bound to a
// copy of base, and only the changed values are set there.
func overlay(cmd *cobra.Command, base v1alpha1.ScheduleSpec) (v1alpha1.ScheduleSpec, error) {
	into := &scheduleFlags{}
	fs := pflag.NewFlagSet("overlay", pflag.ContinueOnError)
	into.register(fs)
	into.spec = base
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		target := fs.Lookup(f.Name)
		if target == nil || err != nil {
			return
		}
		if src, ok := f.Value.(pflag.SliceValue); ok {
			err = target.Value.(pflag.SliceValue).Replace(src.GetSlice())
			return
		}
		err = fs.Set(f.Name, f.Value.String())
	})
	if err != nil {
		return base, err
	}
	if err := into.apply(cmd.Flags().Changed); err != nil {
		return base, err
	}
	return into.spec, nil
}

// calendarFlags are the grandfather-father-son retention flags; they go
// with --keep-last, and an update changes only those given (0 turns one
// off).
var calendarFlags = []string{"keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly"}

func (sf *scheduleFlags) applyCalendar(changed func(string) bool) {
	r, c := &sf.spec.Retention, sf.calendar
	for name, field := range map[string]struct{ to, from *int }{
		"keep-hourly": {&r.KeepHourly, &c.KeepHourly}, "keep-daily": {&r.KeepDaily, &c.KeepDaily},
		"keep-weekly": {&r.KeepWeekly, &c.KeepWeekly}, "keep-monthly": {&r.KeepMonthly, &c.KeepMonthly},
		"keep-yearly": {&r.KeepYearly, &c.KeepYearly},
	} {
		if changed(name) {
			*field.to = *field.from
		}
	}
}

func (sf *scheduleFlags) clearCalendar() {
	r := &sf.spec.Retention
	r.KeepHourly, r.KeepDaily, r.KeepWeekly, r.KeepMonthly, r.KeepYearly = 0, 0, 0, 0, 0
}
