package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupOptions are knobs of how a backup runs, chosen by whoever starts
// it (not part of the spec's identity).
//
// +kubebuilder:object:generate=true
type BackupOptions struct {
	// PageSize is the limit of each paged LIST.
	PageSize int `json:"pageSize,omitempty"`
	// Concurrency is how many resource types are collected at once.
	Concurrency int `json:"concurrency,omitempty"`
	// ClusterUnreachableTimeout is how long activities keep retrying an
	// API server they cannot reach before the backup fails.
	ClusterUnreachableTimeout *metav1.Duration `json:"clusterUnreachableTimeout,omitempty"`
	// HeartbeatTimeout bounds how long a dead worker holds an activity
	// before Temporal retries it elsewhere.
	HeartbeatTimeout *metav1.Duration `json:"heartbeatTimeout,omitempty"`
	// VolumeConcurrency is how many volumes are snapshotted at once.
	VolumeConcurrency int `json:"volumeConcurrency,omitempty"`
	// ActingAs is whom the backup reads the cluster as (nil: the worker).
	// The starter sets it from the caller's authenticated identity and
	// overwrites whatever a request body says.
	ActingAs *Identity `json:"actingAs,omitempty"`
}

// WithDefaults fills unset options.
func (o BackupOptions) WithDefaults() BackupOptions {
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultBackupConcurrency
	}
	if o.ClusterUnreachableTimeout == nil {
		o.ClusterUnreachableTimeout = &metav1.Duration{Duration: DefaultUnreachableTimeout}
	}
	if o.VolumeConcurrency <= 0 {
		o.VolumeConcurrency = DefaultVolumeConcurrency
	}
	if o.HeartbeatTimeout == nil {
		o.HeartbeatTimeout = &metav1.Duration{Duration: DefaultHeartbeatTimeout}
	}
	return o
}

// BackupRequest is the input of the backup workflow.
type BackupRequest struct {
	Spec    BackupSpec    `json:"spec"`
	Options BackupOptions `json:"options"`
}

// ResourceType is one resource type to collect, at its preferred version.
type ResourceType struct {
	Group      string `json:"group,omitempty"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
	// Estimate of the number of objects (0: unknown).
	Estimate int `json:"estimate,omitempty"`
	// Empty says the plan's list of the whole type, made to estimate it,
	// found no object. That list stands for the type's collection, which
	// does not list it again: most types of a cluster are empty, and
	// each list is a request the API server serves in full. Like any
	// list, it shows the type at one moment of the backup's span.
	Empty bool `json:"empty,omitempty"`
	// ListedNamespaces is how many namespaces the plan lists the type in,
	// one at a time (0: one list of the whole type).
	ListedNamespaces int `json:"listedNamespaces,omitempty"`
}

// GroupResource is the "resource.group" name used in the tarball and in
// filters ("configmaps" for the core group).
func (r ResourceType) GroupResource() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// PlanInput is the input of the plan activity.
type PlanInput struct {
	Spec    BackupSpec    `json:"spec"`
	Options BackupOptions `json:"options"`
}

// PlanResult is small by construction: the namespace list and selectors
// stay in the plan object in the location (claim check).
type PlanResult struct {
	KubernetesVersion string            `json:"kubernetesVersion"`
	Namespaces        int               `json:"namespaces"`
	Types             []ResourceType    `json:"types"`
	Skipped           []SkippedResource `json:"skipped,omitempty"`
	// CollectRelated asks for the related cluster-scoped objects (auto mode).
	CollectRelated bool `json:"collectRelated"`
	// Extensions counts the extensions the plan keeps: with any, the
	// backup collects the additional items they ask for.
	Extensions int `json:"extensions,omitempty"`
}

// CollectInput asks one collect activity for a batch of resource types,
// collected one after another: a small type costs one LIST, not an
// activity's round trip through Temporal.
type CollectInput struct {
	Backup   string         `json:"backup"`
	Location string         `json:"location"`
	Types    []ResourceType `json:"types"`
	Options  BackupOptions  `json:"options"`
	// DryRun tells extensions that nothing they answer is kept.
	DryRun bool `json:"dryRun,omitempty"`
	// Namespaces, with a batch of one type listed namespace by namespace,
	// is the share of its namespaces this activity lists: a large type is
	// collected by several activities side by side (nil: all of them).
	Namespaces *NamespaceShare `json:"namespaces,omitempty"`
	// StartTime is the backup's, which every entry of its tarball
	// carries. Given, each part is also stored as a tarball segment that
	// finalize splices in as it is.
	StartTime *time.Time `json:"startTime,omitempty"`
}

// NamespaceShare is one of Of shares of a plan's namespaces, dealt in
// turn: the namespaces whose index i in the plan has i % Of == Index.
// Dealt, not cut in ranges, so the large namespaces of a cluster (often
// neighbours by name) spread over the shares.
type NamespaceShare struct {
	Index int `json:"index"`
	Of    int `json:"of"`
}

// CollectResult is the outcome of one collect activity: one entry per
// type of its input, in the same order.
type CollectResult struct {
	Types []TypeCollected `json:"types"`
}

// TypeCollected is the outcome of collecting one resource type.
type TypeCollected struct {
	Resource string `json:"resource"`
	Items    int    `json:"items"`
	Parts    int    `json:"parts"`
	// Error is a type-level failure the backup records and goes on from
	// (for example Forbidden), making it PartiallyFailed.
	Error string `json:"error,omitempty"`
	// Restarts counts how often an expired continue token forced the type
	// to be listed again from the start.
	Restarts int `json:"restarts,omitempty"`
	// Skipped says where the run's caller may not list the type, and why;
	// the backup holds what the caller could read.
	Skipped string `json:"skipped,omitempty"`
	// ItemErrors counts the items extensions failed: left out, named in
	// the backup's errors, and the backup PartiallyFailed.
	ItemErrors int `json:"itemErrors,omitempty"`
	// Operations counts the operations extensions started for its items,
	// which the backup waits for before it ends.
	Operations int `json:"operations,omitempty"`
}

// CollectRelatedInput asks for the cluster-scoped objects related to what
// was collected: PersistentVolumes of claims, CRDs of custom resources.
type CollectRelatedInput struct {
	Backup   string        `json:"backup"`
	Location string        `json:"location"`
	Options  BackupOptions `json:"options"`
	// CustomResources are the group-resources of custom types with items.
	CustomResources []string `json:"customResources,omitempty"`
}

// CollectRelatedResult counts the related objects collected per type.
type CollectRelatedResult struct {
	Resources map[string]int `json:"resources"`
	Warnings  int            `json:"warnings"`
}

// FinalizeInput carries the final status to record in backup.json.
type FinalizeInput struct {
	Spec    BackupSpec   `json:"spec"`
	Status  BackupStatus `json:"status"`
	WorkRef string       `json:"workflowId"`
	RunID   string       `json:"runId"`
}

// FinalizeResult describes the committed backup.
type FinalizeResult struct {
	Items        int   `json:"items"`
	TarballBytes int64 `json:"tarballBytes"`
	Warnings     int   `json:"warnings"`
	Errors       int   `json:"errors"`
	// CompletionTime is when backup.json was written: the backup's end.
	CompletionTime *time.Time `json:"completionTime,omitempty"`
}

// CleanupInput asks to remove a backup's intermediate state. Discard also
// removes everything but the logs: for a failed or canceled backup.
type CleanupInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	Discard  bool   `json:"discard"`
	// Phase and StartTime of a discarded backup, for its metrics.
	Phase     Phase      `json:"phase,omitempty"`
	StartTime *time.Time `json:"startTime,omitempty"`
}

// CollectAdditionalInput asks for the additional items extensions asked
// for with the collected ones.
type CollectAdditionalInput struct {
	Backup   string        `json:"backup"`
	Location string        `json:"location"`
	Options  BackupOptions `json:"options"`
}

// CollectAdditionalResult counts the additional items stored per type;
// Warnings are those that could not be read (gone, forbidden, of a type
// the cluster does not serve).
type CollectAdditionalResult struct {
	Resources map[string]int `json:"resources"`
	Warnings  int            `json:"warnings"`
}
