package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RestoreOptions are knobs of how a restore runs, not part of its spec.
type RestoreOptions struct {
	// Concurrency is how many items of one resource type are applied at once.
	Concurrency int `json:"concurrency,omitempty"`
	// BatchSize is the number of items per batch; a batch is the unit a
	// retried activity resumes after.
	BatchSize int `json:"batchSize,omitempty"`
	// CRDEstablishTimeout bounds the wait for restored CRDs to serve.
	CRDEstablishTimeout *metav1.Duration `json:"crdEstablishTimeout,omitempty"`
	// ClusterUnreachableTimeout is how long activities keep retrying an
	// API server they cannot reach before the restore fails.
	ClusterUnreachableTimeout *metav1.Duration `json:"clusterUnreachableTimeout,omitempty"`
	// HeartbeatTimeout bounds how long a dead worker holds an activity.
	HeartbeatTimeout *metav1.Duration `json:"heartbeatTimeout,omitempty"`
	// VolumeConcurrency is how many volumes' data is restored at once
	// (each still waits for a data mover slot on its node).
	VolumeConcurrency int `json:"volumeConcurrency,omitempty"`
	// ActingAs is whom the restore reads and writes the cluster as (nil:
	// the worker). The starter sets it from the caller's authenticated
	// identity and overwrites whatever a request body says.
	ActingAs *Identity `json:"actingAs,omitempty"`
}

// WithDefaults fills unset options.
func (o RestoreOptions) WithDefaults() RestoreOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultApplyConcurrency
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.CRDEstablishTimeout == nil {
		o.CRDEstablishTimeout = &metav1.Duration{Duration: DefaultCRDEstablishTimeout}
	}
	if o.ClusterUnreachableTimeout == nil {
		o.ClusterUnreachableTimeout = &metav1.Duration{Duration: DefaultUnreachableTimeout}
	}
	if o.HeartbeatTimeout == nil {
		o.HeartbeatTimeout = &metav1.Duration{Duration: DefaultHeartbeatTimeout}
	}
	if o.VolumeConcurrency <= 0 {
		o.VolumeConcurrency = DefaultVolumeConcurrency
	}
	return o
}

// RestoreRequest is the input of the restore workflow.
type RestoreRequest struct {
	Spec    RestoreSpec    `json:"spec"`
	Options RestoreOptions `json:"options"`
}

// RestorePlanInput is the input of the restore plan activity.
type RestorePlanInput struct {
	Spec    RestoreSpec    `json:"spec"`
	Options RestoreOptions `json:"options"`
}

// RestoreType is one resource type to apply, at the version chosen for
// the target cluster. Its items wait in batches in the location.
type RestoreType struct {
	ResourceType
	Items   int `json:"items"`
	Batches int `json:"batches"`
	// RestoreStatus asks to restore the items' status as well.
	RestoreStatus bool `json:"restoreStatus,omitempty"`
}

// RestorePlanResult lists the types to apply, in order. The items stay
// in the location (claim check).
type RestorePlanResult struct {
	BackupFormat string            `json:"backupFormat"`
	Types        []RestoreType     `json:"types"`
	Skipped      []SkippedResource `json:"skipped,omitempty"`
	ItemsTotal   int               `json:"itemsTotal"`
	// ItemsSkipped were left out by rule (for example pods owned by a
	// restored controller); they are in results.json.
	ItemsSkipped int `json:"itemsSkipped"`
	Warnings     int `json:"warnings"`
	// Volumes are the claims whose data is restored from the repository.
	Volumes []RestoreVolume `json:"volumes,omitempty"`
	// PodVolumes are the restored pods' volumes that get their
	// file-system copies back: each such pod waits for them in an init
	// container.
	PodVolumes []RestoreVolume `json:"podVolumes,omitempty"`
	// StorageClasses is the storage class mapping applied: Velero's
	// ConfigMaps overridden by the spec's.
	StorageClasses map[string]string `json:"storageClasses,omitempty"`
	// Extensions counts the registered extensions that act on restores:
	// with none, no item can start an operation.
	Extensions int `json:"extensions,omitempty"`
}

// ApplyInput asks to apply the batches of resource types, one type after
// another in the order given.
type ApplyInput struct {
	Restore  string                 `json:"restore"`
	Backup   string                 `json:"backup"`
	Location string                 `json:"location"`
	Types    []RestoreType          `json:"types"`
	Policy   ExistingResourcePolicy `json:"existingResourcePolicy"`
	// PreserveNodePorts: node ports count when comparing with an existing Service.
	PreserveNodePorts bool           `json:"preserveNodePorts,omitempty"`
	Options           RestoreOptions `json:"options"`
	// ClaimVolumes maps claims ("namespace/name", as restored) whose data
	// came from the repository to their volume, or why there is none.
	ClaimVolumes map[string]ClaimVolume `json:"claimVolumes,omitempty"`
	// DryRun asks the API server what each write would do (its dry-run
	// mode) and persists nothing.
	DryRun bool `json:"dryRun,omitempty"`
	// NamespaceMapping is the restore's, for the extensions' requests.
	NamespaceMapping map[string]string `json:"namespaceMapping,omitempty"`
}

// ClaimVolume is the volume a restored claim binds to, or, when its data
// could not be restored, why: the claim is then not created.
type ClaimVolume struct {
	PersistentVolume string `json:"persistentVolume,omitempty"`
	Error            string `json:"error,omitempty"`
}

// ApplyResult counts the outcomes of each type of an ApplyInput, in its
// order.
type ApplyResult struct {
	Types []TypeApplied `json:"types"`
}

// TypeApplied counts the outcomes of one resource type.
type TypeApplied struct {
	Resource string      `json:"resource"`
	Outcome  TypeOutcome `json:"outcome"`
	// Deferred items were created without an owner reference to an owner
	// not restored yet; the relink step adds it.
	Deferred int `json:"deferred,omitempty"`
}

// RestoreStepInput names a restore for the steps that need nothing else:
// waiting for CRDs, relinking owners, finalizing, cleaning up.
type RestoreStepInput struct {
	Restore  string         `json:"restore"`
	Location string         `json:"location"`
	Options  RestoreOptions `json:"options"`
}

// StepResult counts what a restore step did (CRDs established, owner
// references added) and the warnings it stored.
type StepResult struct {
	Done     int `json:"done"`
	Warnings int `json:"warnings"`
}

// FinalizeRestoreInput carries the final status to record.
type FinalizeRestoreInput struct {
	Spec   RestoreSpec   `json:"spec"`
	Status RestoreStatus `json:"status"`
}

// FinalizeRestoreResult is what finalize found in the stored outcomes:
// the counts, including those of an apply cut short.
type FinalizeRestoreResult struct {
	Warnings       int                    `json:"warnings"`
	CompletionTime *time.Time             `json:"completionTime,omitempty"`
	Resources      map[string]TypeOutcome `json:"resources,omitempty"`
	ItemsRestored  int                    `json:"itemsRestored"`
	ItemsSkipped   int                    `json:"itemsSkipped"`
	ItemsFailed    int                    `json:"itemsFailed"`
}
