package v1alpha1

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of the run options. Past them a run floods the API server or
// Temporal, holds too much in one activity, or takes long to notice a
// dead worker; a heartbeat timeout of zero would turn heartbeats off, and
// one under 3 s would time out steps that beat once a second as they
// poll (a CSI snapshot's wait, kopia's repository steps).
const (
	maxPageSize           = 10000
	maxBackupConcurrency  = 64
	maxVolumeConcurrency  = 64
	maxApplyConcurrency   = 256
	maxBatchSize          = 5000
	MinHeartbeatTimeout   = 3 * time.Second
	MaxHeartbeatTimeout   = 10 * time.Minute
	minUnreachableTimeout = time.Second
	maxUnreachableTimeout = 24 * time.Hour
	minCRDEstablish       = time.Second
	maxCRDEstablish       = time.Hour
)

// Defaults of the run options: what a count of zero and an unset
// duration take (WithDefaults), and what a refusal names.
const (
	DefaultPageSize            = 500
	DefaultBackupConcurrency   = 4
	DefaultVolumeConcurrency   = 4
	DefaultApplyConcurrency    = 16
	DefaultBatchSize           = 200
	DefaultUnreachableTimeout  = 10 * time.Minute
	DefaultCRDEstablishTimeout = 2 * time.Minute
)

// Problems lists every option out of bounds, naming its field; none for
// options that are valid. Zero counts and unset durations take defaults.
func (o BackupOptions) Problems() []string {
	var p optionProblems
	p.count("pageSize", o.PageSize, maxPageSize, DefaultPageSize)
	p.count("concurrency", o.Concurrency, maxBackupConcurrency, DefaultBackupConcurrency)
	p.count("volumeConcurrency", o.VolumeConcurrency, maxVolumeConcurrency, DefaultVolumeConcurrency)
	p.duration("clusterUnreachableTimeout", o.ClusterUnreachableTimeout, minUnreachableTimeout, maxUnreachableTimeout)
	p.duration("heartbeatTimeout", o.HeartbeatTimeout, MinHeartbeatTimeout, MaxHeartbeatTimeout)
	return p
}

// Problems lists every option out of bounds, naming its field; none for
// options that are valid. Zero counts and unset durations take defaults.
func (o RestoreOptions) Problems() []string {
	var p optionProblems
	p.count("concurrency", o.Concurrency, maxApplyConcurrency, DefaultApplyConcurrency)
	p.count("batchSize", o.BatchSize, maxBatchSize, DefaultBatchSize)
	p.count("volumeConcurrency", o.VolumeConcurrency, maxVolumeConcurrency, DefaultVolumeConcurrency)
	p.duration("crdEstablishTimeout", o.CRDEstablishTimeout, minCRDEstablish, maxCRDEstablish)
	p.duration("clusterUnreachableTimeout", o.ClusterUnreachableTimeout, minUnreachableTimeout, maxUnreachableTimeout)
	p.duration("heartbeatTimeout", o.HeartbeatTimeout, MinHeartbeatTimeout, MaxHeartbeatTimeout)
	return p
}

type optionProblems []string

func (p *optionProblems) count(field string, v, most, def int) {
	if v < 0 || v > most {
		*p = append(*p, fmt.Sprintf("options.%s %d must be between 1 and %d (0 or unset: %d)", field, v, most, def))
	}
}

func (p *optionProblems) duration(field string, d *metav1.Duration, least, most time.Duration) {
	if d != nil && (d.Duration < least || d.Duration > most) {
		*p = append(*p, fmt.Sprintf("options.%s %s must be between %s and %s", field, d.Duration, least, most))
	}
}
