package v1alpha1

import "time"

// TypeOutcome counts what happened to the items of one resource type.
type TypeOutcome struct {
	// Total is the number of items the plan selected.
	Total    int  `json:"total"`
	Restored int  `json:"restored"`
	Skipped  int  `json:"skipped"`
	Failed   int  `json:"failed"`
	Done     bool `json:"done"`
}

// Add sums two counts of the same type.
func (o TypeOutcome) Add(other TypeOutcome) TypeOutcome {
	o.Restored += other.Restored
	o.Skipped += other.Skipped
	o.Failed += other.Failed
	return o
}

// RestoreStatus is what the restore's status query returns and
// restore.json records. It grows with resource types, never with items.
type RestoreStatus struct {
	Name               string                 `json:"name"`
	Backup             string                 `json:"backup"`
	Phase              Phase                  `json:"phase"`
	StartTime          *time.Time             `json:"startTime,omitempty"`
	CompletionTime     *time.Time             `json:"completionTime,omitempty"`
	BackupFormat       string                 `json:"backupFormat,omitempty"`
	ResourceTypesTotal int                    `json:"resourceTypesTotal"`
	ResourceTypesDone  int                    `json:"resourceTypesDone"`
	ItemsTotal         int                    `json:"itemsTotal"`
	ItemsRestored      int                    `json:"itemsRestored"`
	ItemsSkipped       int                    `json:"itemsSkipped"`
	ItemsFailed        int                    `json:"itemsFailed"`
	Warnings           int                    `json:"warnings"`
	Resources          map[string]TypeOutcome `json:"resources,omitempty"`
	// Order is the plan's resource types in apply order.
	Order []string `json:"order,omitempty"`
	// Current is the resource type being applied.
	Current       string            `json:"current,omitempty"`
	Skipped       []SkippedResource `json:"skipped,omitempty"`
	FailureReason string            `json:"failureReason,omitempty"`
	// Volumes are the claims whose data was restored from the repository.
	Volumes []VolumeRestoreStatus `json:"volumes,omitempty"`
	// PodVolumes are the restored pods' volumes whose file-system copies
	// were written into them on their nodes.
	PodVolumes []VolumeRestoreStatus `json:"podVolumes,omitempty"`
	// Hooks are the results of the post-restore exec hooks.
	Hooks []HookResult `json:"hooks,omitempty"`
	// ExtensionOperations counts the operations extensions started for
	// restored items, which operations.json lists one by one.
	ExtensionOperations *OperationCounts `json:"extensionOperations,omitempty"`
	// Waiting are the extensions a running restore's steps wait on, read
	// from their heartbeats when the restore is described.
	Waiting []ExtensionWait `json:"waiting,omitempty"`
}

// ItemResult is what happened to one item of a restore.
type ItemResult string

const (
	ItemRestored ItemResult = "restored"
	ItemSkipped  ItemResult = "skipped"
	ItemFailed   ItemResult = "failed"
)

// ItemAction says how a restored item got to its backed-up state.
type ItemAction string

const (
	ActionCreated   ItemAction = "created"
	ActionUnchanged ItemAction = "unchanged" // it existed, identical
	ActionUpdated   ItemAction = "updated"   // it existed, patched (policy update)
)

// ItemOutcome is one line of a restore's results.json.
type ItemOutcome struct {
	Resource  string     `json:"resource"`
	Namespace string     `json:"namespace,omitempty"`
	Name      string     `json:"name"`
	Result    ItemResult `json:"result"`
	Action    ItemAction `json:"action,omitempty"`
	// Reason says why an item was skipped or failed.
	Reason string `json:"reason,omitempty"`
	// SourceNamespace is the backed-up namespace when it was mapped.
	SourceNamespace string `json:"sourceNamespace,omitempty"`
	// Modifiers are the resource modifier rules that changed the object,
	// "resourceModifierRules[N]".
	Modifiers []string `json:"modifiers,omitempty"`
}

// RestoreResults is restores/<name>/results.json: every item's outcome,
// plus the resource types left out and the warnings of the run.
type RestoreResults struct {
	Items    []ItemOutcome     `json:"items"`
	Skipped  []SkippedResource `json:"skippedResources,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`
}

// MetadataKindRestore heads every restore.json.
const MetadataKindRestore = "Restore"

// RestoreMetadata is restore.json, written when the restore ends.
type RestoreMetadata struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Name       string        `json:"name"`
	Spec       RestoreSpec   `json:"spec"`
	Status     RestoreStatus `json:"status"`
	WorkflowID string        `json:"workflowId,omitempty"`
	RunID      string        `json:"runId,omitempty"`
	// EncryptionKeyID is the ID of the key that encrypted what the run
	// wrote besides this document (sealing.KeyID); empty: written in plain.
	EncryptionKeyID string `json:"encryptionKeyID,omitempty"`
}

// CurrentPhase returns the phase; starter views use it for any run kind.
func (s RestoreStatus) CurrentPhase() Phase { return s.Phase }
