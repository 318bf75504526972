// Package metrics holds cairn's Prometheus metrics of the work a process
// does (backups, restores, deletions) and serves them with the Go runtime
// and process metrics. The starter API adds the schedules' metrics to the
// same page.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds the metrics of this process.
var Registry = prometheus.NewRegistry()

var (
	runs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_runs_total",
		Help: "Backups and restores that ended, by kind (backup, restore) and final phase.",
	}, []string{"kind", "phase"})
	runDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "cairn_run_duration_seconds",
		Help:    "How long backups and restores took from start to end, by kind and final phase.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 16), // 1s to about 9h
	}, []string{"kind", "phase"})
	items = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_items_total",
		Help: "Kubernetes objects backed up (kind=backup) or restored (kind=restore) by runs that ended.",
	}, []string{"kind"})
	backupBytes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "cairn_backup_bytes_total",
		Help: "Bytes of resource tarballs written by completed backups.",
	})
	deletions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_backup_deletions_total",
		Help: "Backups deleted from their location, by reason (requested, expired, retention).",
	}, []string{"reason"})
)

func init() {
	Registry.MustRegister(runs, runDuration, items, backupBytes, deletions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// RunEnded records a backup or restore that reached its final phase. An
// activity retried after it recorded may count a run twice; the counts
// are for dashboards and alerts, the location holds the record.
func RunEnded(kind, phase string, start, end *time.Time, itemCount int) {
	runs.WithLabelValues(kind, phase).Inc()
	if start != nil && end != nil && !end.Before(*start) {
		runDuration.WithLabelValues(kind, phase).Observe(end.Sub(*start).Seconds())
	}
	items.WithLabelValues(kind).Add(float64(itemCount))
}

// BackupBytes records the tarball size of a completed backup.
func BackupBytes(n int64) { backupBytes.Add(float64(n)) }

// BackupDeleted records a deleted backup.
func BackupDeleted(reason string) { deletions.WithLabelValues(reason).Inc() }

// Handler serves the metrics of gatherers (Registry when none) in the
// Prometheus text format.
func Handler(gatherers ...prometheus.Gatherer) http.Handler {
	g := prometheus.Gatherers{Registry}
	g = append(g, gatherers...)
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
