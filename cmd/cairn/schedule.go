package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	cairnloc "github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// schedules is what the shared get and list code needs of a schedule.
var schedules = runKind[*starter.ScheduleView]{
	name: "schedule",
	get:  starter.Service.GetSchedule,
}

func newScheduleCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Run backups on a schedule, keep the newest, and watch their health",
		Long: `Backup schedules are Temporal Schedules (ID schedule/<name>). Each due time
starts workflow scheduled/<name>-<time>, which runs the backup
<name>-<YYYYMMDDhhmmss> (UTC) as its child and then applies the schedule's
retention: the runs it no longer keeps are deleted like 'cairn backup delete'
does. The newest completed backup is never deleted by retention.

A schedule is Degraded when a run takes longer than --max-run-duration, or
when its last completed backup is older than its interval plus a grace
(--max-run-duration, or one more interval without it).

Exit codes: 0 ok, 1 error, 2 invalid input (nothing created), 3 conflict,
4 not found.`,
	}
	cmd.AddCommand(newScheduleCreateCommand(g), newScheduleUpdateCommand(g),
		newShowCommand(g, schedules, "get NAME", "Show one schedule as a table row (or its full record with -o json|yaml)",
			func(w io.Writer, v *starter.ScheduleView) { scheduleTable(w, []*starter.ScheduleView{v}) }),
		newListCommand(g, "List backup schedules with their health", starter.Service.ListSchedules,
			func(w io.Writer, l *starter.ScheduleList, _ string) {
				if len(l.Items) == 0 {
					fmt.Fprintln(w, "No backup schedules.")
					return
				}
				scheduleTable(w, l.Items)
			}),
		newShowCommand(g, schedules, "describe NAME", "Show a schedule in detail: spec, health and why, next runs, backups kept", describeSchedule),
		newSchedulePauseCommand(g, true), newSchedulePauseCommand(g, false),
		newScheduleTriggerCommand(g), newScheduleDeleteCommand(g))
	return cmd
}

func scheduleTable(w io.Writer, items []*starter.ScheduleView) {
	row(w, "NAME", "WHEN", "STATE", "HEALTH", "LAST SUCCESS", "NEXT RUN", "BACKUPS", "RETENTION")
	for _, v := range items {
		state := "Active"
		if v.Paused {
			state = "Paused"
		}
		next := "-"
		if len(v.NextRuns) > 0 && !v.Paused {
			next = "in " + shortDuration(time.Until(v.NextRuns[0]))
		}
		row(w, v.Name, when(v.Spec), state, v.Health.State, age(v.LastSuccess), next, fmt.Sprint(len(v.Backups)), retention(v.Spec.Retention))
	}
}

func describeSchedule(w io.Writer, v *starter.ScheduleView) {
	s := v.Spec
	row(w, "Name:", v.Name)
	row(w, "Kind:", s.RunKind())
	row(w, "When:", when(s))
	if s.Jitter != nil && s.Jitter.Duration > 0 {
		row(w, "Jitter:", s.Jitter.Duration.String())
	}
	state := "Active"
	if v.Paused {
		state = "Paused"
	}
	row(w, "State:", state+noteSuffix(v.Note))
	row(w, "Health:", v.Health.State)
	for _, r := range v.Health.Reasons {
		row(w, "", "- "+r)
	}
	row(w, "Overlap:", string(s.Overlap))
	if s.CatchupWindow != nil {
		row(w, "Catch-up window:", s.CatchupWindow.Duration.String())
	}
	if s.MaxRunDuration != nil {
		row(w, "Max run duration:", s.MaxRunDuration.Duration.String())
	}
	row(w, "Retention:", retention(s.Retention))
	t := s.Template
	if s.RunKind() == v1alpha1.KindBackup {
		row(w, "Backs up:", fmt.Sprintf("namespaces include %v exclude %v; resources include %v exclude %v; cluster-scoped %s",
			t.IncludedNamespaces, t.ExcludedNamespaces, t.IncludedResources, t.ExcludedResources, t.ClusterResources))
	}
	if t.TTL != nil {
		row(w, "Backup TTL:", t.TTL.Duration.String())
	}
	row(w, "Location:", cairnloc.Display(t.StorageLocation))
	row(w, "Created:", timestamp(&v.CreatedAt))
	row(w, "Last success:", timestamp(v.LastSuccess))
	for i, n := range v.NextRuns {
		label := ""
		if i == 0 {
			label = "Next runs:"
		}
		row(w, label, timestamp(&n))
	}
	row(w, "Actions:", fmt.Sprintf("%d started, %d skipped (overlap), %d missed (catch-up window)",
		v.Actions.Started, v.Actions.SkippedOverlap, v.Actions.MissedCatchup))
	if v.UIURL != "" {
		row(w, "Temporal UI:", v.UIURL)
	}
	if len(v.Running) > 0 {
		fmt.Fprintln(w)
		row(w, "RUNNING", "STARTED")
		for _, r := range v.Running {
			row(w, r.Name, age(&r.Start))
		}
	}
	fmt.Fprintln(w)
	if len(v.Backups) == 0 {
		fmt.Fprintln(w, "No finished runs in the location yet.")
		return
	}
	row(w, "BACKUP", "PHASE", "ENDED", "SIZE")
	for _, b := range v.Backups {
		size := "-"
		if b.Bytes > 0 {
			size = fmt.Sprint(b.Bytes)
		}
		row(w, b.Name, string(b.Phase), age(&b.Time), size)
	}
}

func when(s v1alpha1.ScheduleSpec) string {
	if s.Every != nil {
		return "every " + s.Every.Duration.String()
	}
	if s.TimeZone != "" && s.TimeZone != "UTC" {
		return s.Cron + " (" + s.TimeZone + ")"
	}
	return s.Cron
}

func retention(r v1alpha1.RetentionPolicy) string {
	var kind string
	var calendar []string
	for _, rule := range []struct {
		n    int
		unit string
	}{{r.KeepHourly, "hourly"}, {r.KeepDaily, "daily"}, {r.KeepWeekly, "weekly"}, {r.KeepMonthly, "monthly"}, {r.KeepYearly, "yearly"}} {
		if rule.n > 0 {
			calendar = append(calendar, fmt.Sprintf("%d %s", rule.n, rule.unit))
		}
	}
	switch {
	case r.KeepLast != nil && len(calendar) > 0:
		kind = fmt.Sprintf("keep last %d, %s", *r.KeepLast, strings.Join(calendar, ", "))
	case len(calendar) > 0:
		kind = "keep " + strings.Join(calendar, ", ")
	case r.KeepLast != nil:
		kind = fmt.Sprintf("keep last %d", *r.KeepLast)
	case r.MaxTotalSize != "":
		kind = "keep up to " + r.MaxTotalSize
	case r.MaxAge != nil:
		kind = "keep " + r.MaxAge.Duration.String()
	default:
		kind = "keep all"
	}
	if r.KeepFailed != nil {
		kind += fmt.Sprintf(", %d failed", *r.KeepFailed)
	}
	return kind
}

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return " (" + note + ")"
}
