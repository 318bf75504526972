package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// scheduleMetricsMaxAge is how long a scrape reuses the schedules it read:
// each read describes every schedule and lists its runs in the location.
const scheduleMetricsMaxAge = 15 * time.Second

var (
	scheduleLastSuccess = prometheus.NewDesc("cairn_schedule_last_success_timestamp_seconds",
		"When the newest completed backup of the schedule ended (Unix time); absent before the first.", []string{"schedule"}, nil)
	scheduleDegraded = prometheus.NewDesc("cairn_schedule_degraded",
		"1 when the schedule is Degraded: a run over maxRunDuration, or no completed backup within interval plus grace.", []string{"schedule"}, nil)
	schedulePaused  = prometheus.NewDesc("cairn_schedule_paused", "1 when the schedule is paused.", []string{"schedule"}, nil)
	scheduleBackups = prometheus.NewDesc("cairn_schedule_backups",
		"Finished runs of the schedule in its location, by phase.", []string{"schedule", "phase"}, nil)
	scheduleRunning      = prometheus.NewDesc("cairn_schedule_running_runs", "Runs of the schedule not ended yet.", []string{"schedule"}, nil)
	scheduleScrapeErrors = prometheus.NewDesc("cairn_schedule_scrape_error",
		"1 when the schedules could not be read for this scrape.", nil, nil)
)

// scheduleCollector reports the state of every backup schedule, read from
// Temporal and the locations at scrape time (at most every
// scheduleMetricsMaxAge).
type scheduleCollector struct {
	c   *starter.Client
	log *zap.Logger

	mu     sync.Mutex
	read   time.Time
	cached []*starter.ScheduleView
	err    error
}

func newScheduleCollector(c *starter.Client, log *zap.Logger) *scheduleCollector {
	return &scheduleCollector{c: c, log: log}
}

func (sc *scheduleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{scheduleLastSuccess, scheduleDegraded, schedulePaused, scheduleBackups, scheduleRunning, scheduleScrapeErrors} {
		ch <- d
	}
}

func (sc *scheduleCollector) Collect(ch chan<- prometheus.Metric) {
	views, err := sc.schedules()
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(scheduleScrapeErrors, prometheus.GaugeValue, failed)
	for _, v := range views {
		if v.LastSuccess != nil {
			ch <- prometheus.MustNewConstMetric(scheduleLastSuccess, prometheus.GaugeValue, float64(v.LastSuccess.Unix()), v.Name)
		}
		ch <- prometheus.MustNewConstMetric(scheduleDegraded, prometheus.GaugeValue, boolGauge(v.Health.State == v1alpha1.HealthDegraded), v.Name)
		ch <- prometheus.MustNewConstMetric(schedulePaused, prometheus.GaugeValue, boolGauge(v.Paused), v.Name)
		ch <- prometheus.MustNewConstMetric(scheduleRunning, prometheus.GaugeValue, float64(len(v.Running)), v.Name)
		byPhase := map[v1alpha1.Phase]int{}
		for _, b := range v.Backups {
			byPhase[b.Phase]++
		}
		for _, p := range []v1alpha1.Phase{v1alpha1.PhaseCompleted, v1alpha1.PhasePartiallyFailed, v1alpha1.PhaseFailed} {
			ch <- prometheus.MustNewConstMetric(scheduleBackups, prometheus.GaugeValue, float64(byPhase[p]), v.Name, string(p))
		}
	}
}

func (sc *scheduleCollector) schedules() ([]*starter.ScheduleView, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if time.Since(sc.read) < scheduleMetricsMaxAge {
		return sc.cached, sc.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := sc.c.ListSchedules(ctx)
	sc.read, sc.err = time.Now(), err
	if err != nil {
		sc.log.Warn("Reading schedules for metrics failed", zap.Error(err))
		return sc.cached, err // the last good values, flagged by the error gauge
	}
	sc.cached = list.Items
	return sc.cached, nil
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
