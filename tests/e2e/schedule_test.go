package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// TestSchedules drives backup schedules on a real Temporal server against
// the sandbox cluster: bad input, interval runs, pause and trigger,
// keep-last, size and age retention, a worker killed mid-run, overlap
// skip while a run is slow, and the Degraded state with its metric.
func TestSchedules(t *testing.T) {
	t.Parallel()
	s := newSharedStack(t)
	seedConfigMaps(t, s.cluster.Config(), "sch", 1, 20)
	seedConfigMaps(t, s.cluster.Config(), "slow", 1, 300)
	metricsAddr := freePort(t)
	// Short heartbeats: a killed worker's step is retried within seconds.
	worker := s.startWorker("--location", s.location, "--page-interval", "100ms", "--metrics-address", metricsAddr, "--heartbeat-timeout", "5s")
	api := devAPI(t, s)
	top := t // the API made anew after a restart serves every subtest
	sch := &schedules{s: s}

	t.Run("bad input creates nothing", func(t *testing.T) {
		for name, tc := range map[string]struct {
			args []string
			want string
		}{
			"invalid cron":        {[]string{"--cron", "61 * * * *", "--keep-last", "3"}, `cron "61 * * * *" is invalid`},
			"unknown time zone":   {[]string{"--cron", "0 2 * * *", "--time-zone", "Mars/Olympus", "--keep-last", "3"}, `timeZone "Mars/Olympus" is not a known IANA time zone`},
			"two retention kinds": {[]string{"--every", "1h", "--keep-last", "3", "--max-age", "1h"}, "give one retention kind"},
			"no retention":        {[]string{"--every", "1h"}, "set exactly one of keepLast, maxTotalSize, maxAge"},
			"negative count":      {[]string{"--every", "1h", "--keep-last", "-1"}, "keepLast -1 must be at least 1"},
			"negative failed":     {[]string{"--every", "1h", "--keep-last", "2", "--keep-failed", "-1"}, "keepFailed -1 must not be negative"},
			"unknown resource":    {[]string{"--every", "1h", "--keep-last", "2", "--include-resources", "gizmos"}, "gizmos"},
		} {
			_, stderr, code := s.cli(append([]string{"schedule", "create", "bad"}, tc.args...)...)
			assert.Equal(t, starter.ExitInvalid, code, "%s: %s", name, stderr)
			assert.Contains(t, stderr, tc.want, name)
		}
		code, body := post(t, api.URL+"/v1/schedules", `{"name":"bad","every":"1h","retention":{"keepLast":3,"maxAge":"1h","keepFailed":-2}}`)
		assert.Equal(t, http.StatusBadRequest, code, string(body))
		assert.Contains(t, string(body), "exactly one of keepLast, maxTotalSize, maxAge (found 2)")
		assert.Contains(t, string(body), "keepFailed -2 must not be negative")
		code, body = post(t, api.URL+"/v1/schedules", `{"name":"bad","every":"1h","retention":{"keepLast":3},"typo":1}`)
		assert.Equal(t, http.StatusBadRequest, code, string(body))

		_, stderr, code := s.cli("schedule", "create", "dup", "--every", "1h", "--keep-last", "1", "--paused")
		require.Equal(t, 0, code, stderr)
		_, stderr, code = s.cli("schedule", "create", "dup", "--every", "2h", "--keep-last", "1")
		assert.Equal(t, starter.ExitConflict, code, stderr)
		assert.Contains(t, stderr, `schedule "dup" already exists`)
		code, _ = post(t, api.URL+"/v1/schedules", `{"name":"dup","every":"1h","retention":{"keepLast":3}}`)
		assert.Equal(t, http.StatusConflict, code)
		v := sch.get("dup")
		assert.Equal(t, time.Hour, v.Spec.Every.Duration, "the duplicate changed nothing")

		assert.Equal(t, []string{"dup"}, sch.names(), "no invalid schedule was created")
		_, _, code = s.cli("schedule", "describe", "no-such-schedule")
		assert.Equal(t, starter.ExitNotFound, code)
		_, stderr, code = s.cli("schedule", "delete", "dup")
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, sch.names())
	})

	t.Run("an interval schedule runs until paused; trigger runs one now", func(t *testing.T) {
		_, stderr, code := s.cli("schedule", "create", "tick", "--every", "2s", "--keep-last", "2", "--include-namespaces", "sch-*")
		require.Equal(t, 0, code, stderr)
		until(t, func() bool { return len(sch.completed("tick")) >= 2 }, 2*time.Minute, 500*time.Millisecond)
		checked := 0
		for _, b := range sch.completed("tick") {
			assert.Regexp(t, regexp.MustCompile(`^tick-\d{14}$`), b)
			v, err := s.starter.GetBackup(context.Background(), b)
			require.NoError(t, err)
			if v.Phase == v1alpha1.PhaseDeleted {
				// keep-last 2 pruned it since the list (the schedule runs
				// every 2s).
				continue
			}
			require.NotNil(t, v.Spec, "%s (%s): a view has its spec, also before its run closes", b, v.Phase)
			assert.Equal(t, "tick", v.Spec.Schedule, "the backup records its schedule")
			checked++
		}
		assert.Positive(t, checked, "a listed backup was still there to check")
		assert.Positive(t, sch.count(`CairnKind="backup" AND CairnSchedule="tick"`), "backups carry the schedule's search attribute")

		_, stderr, code = s.cli("schedule", "pause", "tick", "--note", "maintenance")
		require.Equal(t, 0, code, stderr)
		sch.waitIdle("tick")
		before := sch.get("tick")
		assert.True(t, before.Paused)
		// One interval, so a due time passes while paused. The trigger
		// after it is the barrier: Temporal's scheduler takes every due
		// time up to now before it handles a trigger, so a start while
		// paused is counted by the time the triggered run is.
		time.Sleep(2 * time.Second)

		stdout, stderr, code := s.cli("schedule", "trigger", "tick", "-o", "json")
		require.Equal(t, 0, code, stderr)
		var trig starter.TriggerResult
		require.NoError(t, json.Unmarshal([]byte(stdout), &trig))
		require.NotEmpty(t, trig.Backup)
		require.NoError(t, s.starter.WaitRun(context.Background(), trig.WorkflowID, ""))
		assert.Equal(t, before.Actions.Started+1, sch.get("tick").Actions.Started, "a paused schedule starts nothing but the triggered run")
		kept := sch.completed("tick")
		assert.Len(t, kept, 2, "keep-last 2")
		assert.Contains(t, kept, trig.Backup, "the triggered run is the newest and is kept")

		metrics := scrape(t, api.URL+"/metrics")
		assert.Contains(t, metrics, `cairn_schedule_paused{schedule="tick"} 1`)
		assert.Contains(t, metrics, `cairn_schedule_last_success_timestamp_seconds{schedule="tick"}`)
		assert.Contains(t, metrics, `cairn_schedule_backups{phase="Completed",schedule="tick"} 2`)
		workerMetrics := scrape(t, "http://"+metricsAddr+"/metrics")
		assert.GreaterOrEqual(t, metricValue(t, workerMetrics, `cairn_runs_total{kind="backup",phase="Completed"}`), 3.0)
		assert.GreaterOrEqual(t, metricValue(t, workerMetrics, `cairn_backup_deletions_total{reason="retention"}`), 1.0)

		_, stderr, code = s.cli("schedule", "delete", "tick")
		require.Equal(t, 0, code, stderr)
		assert.Len(t, backupsOf(t, s, "tick"), 2, "deleting a schedule keeps its backups")
	})

	t.Run("keep-last 3 leaves the newest 3 of 5 runs or more, through worker kills and a Temporal kill", func(t *testing.T) {
		_, err := s.starter.CreateSchedule(context.Background(), v1alpha1.ScheduleSpec{Name: "five", Cron: "0 0 1 1 *",
			Retention: v1alpha1.RetentionPolicy{KeepLast: ptr.To(3)}, Template: v1alpha1.BackupSpec{IncludedNamespaces: []string{"sch-*"}},
			BackupOptions: v1alpha1.BackupOptions{HeartbeatTimeout: &metav1.Duration{Duration: 5 * time.Second}}})
		require.NoError(t, err)
		restartWorker := func() {
			worker.kill()
			worker = s.startWorker("--location", s.location, "--page-interval", "100ms", "--heartbeat-timeout", "5s")
		}
		// Five runs at least; a run whose step the test did not catch
		// frozen (it ended first) is followed by another that is tried.
		var names []string
		workerKilled, temporalKilled, deletionKilled := false, false, false
		var last *starter.TriggerResult
		for len(names) < 5 || !workerKilled || !temporalKilled || !deletionKilled {
			require.Less(t, len(names), 15, "the kills were never landed mid-step")
			last = sch.trigger("five")
			names = append(names, last.Backup)
			killedHere := false
			switch {
			case len(names) >= 3 && !workerKilled:
				// The worker dies frozen in the run's last step.
				if catchActivity(t, s, worker, v1alpha1.BackupWorkflowID(last.Backup), finalizeBackupActivity) {
					restartWorker()
					workerKilled, killedHere = true, true
				}
			case len(names) >= 4 && !deletionKilled:
				// The worker dies frozen in the deletion of the run that
				// retention no longer keeps: the oldest of the four left.
				pruned := v1alpha1.DeleteWorkflowID(names[len(names)-4])
				if catchActivity(t, s, worker, pruned, deleteBackupDataActivity) {
					restartWorker()
					require.NoError(t, s.starter.WaitRun(context.Background(), last.WorkflowID, ""))
					assert.Greater(t, activityAttempt(t, s, pruned, deleteBackupDataActivity), int32(1),
						"the worker kill landed mid-deletion: DeleteBackupData ran again")
					deletionKilled = true
				}
			case workerKilled && !temporalKilled:
				// Temporal dies with the worker frozen in the run's
				// retention, which then finishes after it.
				retention := v1alpha1.RetentionWorkflowID(last.Backup)
				if catchActivity(t, s, worker, retention, planRetentionActivity) {
					s.temporal.kill()
					killedAt := time.Now()
					worker.thaw()
					s.startTemporal()    // same port, same SQLite file
					api = devAPI(top, s) // on the new client
					require.NoError(t, s.starter.WaitRun(context.Background(), last.WorkflowID, ""))
					assert.True(t, activityCompletedAt(t, s, retention, planRetentionActivity).After(killedAt),
						"the kill landed mid-retention")
					temporalKilled = true
				}
			}
			require.NoError(t, s.starter.WaitRun(context.Background(), last.WorkflowID, ""))
			if killedHere {
				assert.Greater(t, activityAttempt(t, s, v1alpha1.BackupWorkflowID(last.Backup), finalizeBackupActivity), int32(1),
					"the worker kill landed mid-step: the run's finalize ran again")
			}
		}
		recordHistory(t, s, last.WorkflowID, "scheduled_run_paged_retention.json")
		recordHistory(t, s, v1alpha1.RetentionWorkflowID(last.Backup), "apply_retention_completed.json")
		sort.Strings(names)
		newest := names[len(names)-3:]
		assert.Equal(t, newest, sch.completed("five"), "exactly the newest three stay")
		assert.ElementsMatch(t, newest, backupsOf(t, s, "five"), "and nothing else of the schedule is left in the location")
	})

	t.Run("size and age retention; the newest success survives", func(t *testing.T) {
		_, stderr, code := s.cli("schedule", "create", "sized", "--cron", "@yearly", "--max-total-size", "1Gi", "--include-namespaces", "sch-*")
		require.Equal(t, 0, code, stderr)
		first := sch.runOnce("sized")
		listed := sch.get("sized").Backups
		require.Len(t, listed, 1)
		size := listed[0].Bytes
		require.Positive(t, size)
		_, stderr, code = s.cli("schedule", "update", "sized", "--max-total-size", strconv.FormatInt(size*5/2, 10))
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "@yearly", sch.get("sized").Spec.Cron, "update changed only the size")
		var last []string
		for range 3 {
			last = append(last, sch.runOnce("sized"))
		}
		assert.Equal(t, last[1:], sch.completed("sized"), "two runs fit in two and a half times one run's size")
		assert.NotContains(t, backupsOf(t, s, "sized"), first)

		_, stderr, code = s.cli("schedule", "create", "aged", "--cron", "@yearly", "--max-age", "3s", "--include-namespaces", "sch-*")
		require.Equal(t, 0, code, stderr)
		a := sch.runOnce("aged")
		time.Sleep(3500 * time.Millisecond)
		b := sch.runOnce("aged")
		assert.Equal(t, []string{b}, sch.completed("aged"), "the run older than 3s is deleted: %s", a)

		// A slow run canceled by hand: it counts as a failed run, and the
		// completed run before it, though older than maxAge, is the newest
		// success and stays.
		_, stderr, code = s.cli("schedule", "update", "aged", "--include-namespaces", "slow-*", "--page-size", "5")
		require.Equal(t, 0, code, stderr)
		time.Sleep(3500 * time.Millisecond)
		trig := sch.trigger("aged")
		s.waitBackup(trig.Backup, time.Minute, func(v *starter.BackupView) bool { return v.Phase == v1alpha1.PhaseInProgress })
		worker.freeze() // the run cannot end before the cancel lands
		_, stderr, code = s.cli("backup", "cancel", trig.Backup)
		worker.thaw()
		require.Equal(t, 0, code, stderr)
		assert.Error(t, s.starter.WaitRun(context.Background(), trig.WorkflowID, ""), "a run whose backup was canceled fails")
		v := sch.get("aged")
		assert.Equal(t, []string{b}, sch.completed("aged"), "the newest success survives")
		require.Len(t, v.Backups, 2, "%+v", v.Backups)
		assert.Equal(t, v1alpha1.PhaseFailed, v.Backups[0].Phase, "the canceled run is kept (keep-failed 1)")

		// A restore from the schedule takes its newest success, not the
		// newer canceled run.
		_, stderr, code = s.cli("restore", "create", "from-aged", "--from-schedule", "aged", "--existing-resource-policy", "none", "--wait")
		require.Equal(t, 0, code, stderr)
		r, err := s.starter.GetRestore(context.Background(), "from-aged")
		require.NoError(t, err)
		require.NotNil(t, r.Spec)
		assert.Equal(t, b, r.Spec.BackupName)
		assert.Equal(t, "aged", r.Spec.ScheduleName)
		_, stderr, code = s.cli("restore", "create", "from-nothing", "--from-schedule", "no-such-schedule")
		assert.Equal(t, starter.ExitNotFound, code, stderr)
		assert.Contains(t, stderr, `unknown schedule "no-such-schedule"`)
	})

	t.Run("calendar retention keeps the newest run of each day in the schedule's zone", func(t *testing.T) {
		_, stderr, code := s.cli("schedule", "create", "gfs", "--cron", "@yearly", "--time-zone", "Pacific/Auckland",
			"--keep-daily", "2", "--include-namespaces", "sch-*")
		require.Equal(t, 0, code, stderr)
		var names []string
		for range 3 {
			names = append(names, sch.runOnce("gfs"))
		}
		// The runs are seconds apart: one Auckland day, or two if one
		// passed midnight there. Either way each day keeps its newest.
		zone, err := time.LoadLocation("Pacific/Auckland")
		require.NoError(t, err)
		newestOfDay := map[string]string{}
		for _, name := range names {
			at, ok := v1alpha1.ScheduledRunTime("gfs", name)
			require.True(t, ok, name)
			if day := at.In(zone).Format(time.DateOnly); name > newestOfDay[day] {
				newestOfDay[day] = name
			}
		}
		var want []string
		for _, name := range newestOfDay {
			want = append(want, name)
		}
		sort.Strings(want)
		assert.Equal(t, want, sch.completed("gfs"))
		assert.Less(t, len(want), len(names), "older runs of a day were deleted")
		stdout, _, code := s.cli("schedule", "describe", "gfs")
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, "keep 2 daily")
	})

	t.Run("overlap skip while a run is slow, and the Degraded state", func(t *testing.T) {
		_, stderr, code := s.cli("schedule", "create", "slow", "--every", "2s", "--keep-last", "5", "--max-run-duration", "3s",
			"--include-namespaces", "slow-*", "--page-size", "5")
		require.Equal(t, 0, code, stderr)
		var v *starter.ScheduleView
		mostRunning := 0
		until(t, func() bool {
			v = sch.get("slow")
			mostRunning = max(mostRunning, len(v.Running))
			return v.Actions.SkippedOverlap >= 1 && v.Health.State == v1alpha1.HealthDegraded
		}, time.Minute, 300*time.Millisecond)
		assert.Equal(t, 1, mostRunning, "overlap skip: never two runs at once")
		assert.Contains(t, v.Health.Reasons[0], "longer than maxRunDuration 3s")
		// Health is judged when read: right after a run ends, the next is
		// younger than maxRunDuration for a moment and the schedule reads
		// Healthy. Each check is retried until it reads Degraded too.
		assert.EventuallyWithT(t, func(c *assert.CollectT) {
			stdout, _, code := s.cli("schedule", "describe", "slow")
			require.Equal(c, 0, code)
			assert.Contains(c, stdout, "Degraded")
			assert.Contains(c, stdout, "longer than maxRunDuration")
		}, time.Minute, 300*time.Millisecond)
		assert.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Contains(c, scrape(t, api.URL+"/metrics"), `cairn_schedule_degraded{schedule="slow"} 1`)
		}, time.Minute, 300*time.Millisecond)
		until(t, func() bool {
			return sch.count(`CairnKind="scheduled-run" AND CairnSchedule="slow" AND CairnHealth="Degraded"`) >= 1
		}, 30*time.Second, 500*time.Millisecond, "the run marks itself Degraded for the Temporal UI")

		_, stderr, code = s.cli("schedule", "delete", "slow")
		require.Equal(t, 0, code, stderr)
		for _, r := range v.Running {
			_, _, _ = s.cli("backup", "cancel", r.Name)
		}
	})
}

// schedules holds the helpers of TestSchedules.
type schedules struct{ s *stack }

func (h *schedules) get(name string) *starter.ScheduleView {
	h.s.t.Helper()
	v, err := h.s.starter.GetSchedule(context.Background(), name)
	require.NoError(h.s.t, err)
	return v
}

func (h *schedules) names() []string {
	h.s.t.Helper()
	list, err := h.s.starter.ListSchedules(context.Background())
	require.NoError(h.s.t, err)
	names := []string{}
	for _, v := range list.Items {
		names = append(names, v.Name)
	}
	return names
}

// completed names the schedule's completed backups, oldest first.
func (h *schedules) completed(name string) []string {
	var out []string
	for _, b := range h.get(name).Backups {
		if b.Phase == v1alpha1.PhaseCompleted {
			out = append(out, b.Name)
		}
	}
	sort.Strings(out)
	return out
}

func (h *schedules) waitIdle(name string) {
	h.s.t.Helper()
	until(h.s.t, func() bool { return len(h.get(name).Running) == 0 }, time.Minute, 300*time.Millisecond)
}

func (h *schedules) trigger(name string) *starter.TriggerResult {
	h.s.t.Helper()
	res, err := h.s.starter.TriggerSchedule(context.Background(), name)
	require.NoError(h.s.t, err)
	require.NotEmpty(h.s.t, res.Backup, "the trigger started a run")
	return res
}

// runOnce triggers a run and waits until it, retention included, ends.
func (h *schedules) runOnce(name string) string {
	h.s.t.Helper()
	res := h.trigger(name)
	require.NoError(h.s.t, h.s.starter.WaitRun(context.Background(), res.WorkflowID, ""))
	return res.Backup
}

func (h *schedules) count(query string) int64 {
	h.s.t.Helper()
	res, err := h.s.temporalC.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: query})
	require.NoError(h.s.t, err)
	return res.GetCount()
}

// backupsOf lists the backup folders of a schedule's runs in the location.
func backupsOf(t *testing.T, s *stack, schedule string) []string {
	t.Helper()
	var out []string
	for name := range listedBackups(t, s) {
		if _, ok := v1alpha1.ScheduledRunTime(schedule, name); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(data)
}

// metricValue reads one sample of a Prometheus text page.
func metricValue(t *testing.T, page, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(series) + ` (\S+)`).FindStringSubmatch(page)
	require.NotNil(t, m, "series %s not in\n%s", series, page)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}
