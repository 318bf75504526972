package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
)

// DryRunScratchPrefix starts the scratch names of dry runs; a backup
// may not be named so.
const DryRunScratchPrefix = "dry-run-"

// DryRunScratchName is the backup name a dry run's steps write under in
// the location: derived from its workflow ID, so a retried step writes
// to the same place.
func DryRunScratchName(workflowID string) string {
	sum := sha256.Sum256([]byte(workflowID))
	return DryRunScratchPrefix + hex.EncodeToString(sum[:8])
}

// DryRunNamesPerType bounds the names a dry run lists per type.
const DryRunNamesPerType = 100

// DryRunWarningLines bounds the warning lines a dry run reports.
const DryRunWarningLines = 200

// DryRunItems bounds the items a restore's dry run lists in all, and
// DryRunReasonBytes each one's reason, so its report stays far below
// Temporal's payload limit whatever the backup holds.
const (
	DryRunItems       = 2000
	DryRunReasonBytes = 300
)

// BackupDryRun is what a backup would take, as its dry run found it. It
// is bounded by types and volumes: names, hooks and warnings are cut at
// DryRunNamesPerType and DryRunWarningLines.
type BackupDryRun struct {
	Name       string `json:"name"`
	WorkflowID string `json:"workflowId"`
	// Namespaces is how many namespaces the backup would read.
	Namespaces int `json:"namespaces"`
	// Resources are the items per type (group-resource), related
	// cluster-scoped objects included.
	Resources map[string]int `json:"resources"`
	// Related names the related cluster-scoped objects per type.
	Related map[string][]string `json:"related,omitempty"`
	// Volumes are the claims whose volumes would be snapshotted (and
	// moved, with snapshotMoveData); claims left out are warnings.
	Volumes []DryRunVolume `json:"volumes,omitempty"`
	// Hooks are the pods whose hooks would run: the first
	// DryRunNamesPerType of HooksTotal.
	Hooks      []HookedPod `json:"hooks,omitempty"`
	HooksTotal int         `json:"hooksTotal,omitempty"`
	// Skipped are the resource types the backup would leave out, and why.
	Skipped []SkippedResource `json:"skipped,omitempty"`
	// Warnings are what the backup would warn about, WarningsTotal in
	// all; Errors counts types that would fail.
	Warnings      []string `json:"warnings,omitempty"`
	WarningsTotal int      `json:"warningsTotal"`
	Errors        int      `json:"errors"`
	// ExtensionOperations counts the operations extensions answered they
	// would start; none runs.
	ExtensionOperations int `json:"extensionOperations,omitempty"`
}

// DryRunVolume is what a backup would do with one claim's volume.
type DryRunVolume struct {
	Volume
	// Action is "snapshot" or "snapshot and move data".
	Action string `json:"action"`
}

// SummarizeDryRunInput names a dry run's scratch backup and the related
// types whose objects it names.
type SummarizeDryRunInput struct {
	Scratch  string   `json:"scratch"`
	Location string   `json:"location"`
	Related  []string `json:"related,omitempty"`
}

// DryRunSummary is what a dry run's scratch data holds that its
// workflow does not: the warnings of every step and the names of the
// related cluster-scoped objects.
type DryRunSummary struct {
	Related       map[string][]string `json:"related,omitempty"`
	Warnings      []string            `json:"warnings,omitempty"`
	WarningsTotal int                 `json:"warningsTotal"`
}

// RestoreDryRun is what a restore would do, as the API server answered
// its dry run of every write. It is bounded by types: items are listed up
// to DryRunNamesPerType per type.
type RestoreDryRun struct {
	Name       string `json:"name"`
	Backup     string `json:"backup"`
	WorkflowID string `json:"workflowId"`
	// NamespaceMapping and StorageClassMapping are the mappings applied.
	NamespaceMapping    map[string]string `json:"namespaceMapping,omitempty"`
	StorageClassMapping map[string]string `json:"storageClassMapping,omitempty"`
	// Resources are the outcomes per type (group-resource), in apply order
	// in Order.
	Resources map[string]DryRunTypeOutcome `json:"resources"`
	Order     []string                     `json:"order,omitempty"`
	// Skipped are the types the restore would leave out, and why.
	Skipped []SkippedResource `json:"skipped,omitempty"`
	// Volumes are the claims whose data would be restored from the
	// repository (not tried in a dry run).
	Volumes []string `json:"volumes,omitempty"`
	// Modifiers say which resource modifier rules would change objects.
	Modifiers []DryRunModifier `json:"modifiers,omitempty"`
	// ExtensionOperations counts the operations extensions answered they
	// would start for the items that would be restored (none ran).
	ExtensionOperations int `json:"extensionOperations,omitempty"`
}

// DryRunTypeOutcome counts what would happen to the items of one type,
// and lists the first DryRunNamesPerType of them (DryRunItems in all).
type DryRunTypeOutcome struct {
	Created   int           `json:"created"`
	Unchanged int           `json:"unchanged"`
	Updated   int           `json:"updated"`
	Skipped   int           `json:"skipped"`
	Failed    int           `json:"failed"`
	Items     []ItemOutcome `json:"items,omitempty"`
}

// Add counts one item's outcome, and lists it if list says so and the
// type has room.
func (o *DryRunTypeOutcome) Add(item ItemOutcome, list bool) {
	switch {
	case item.Result == ItemSkipped:
		o.Skipped++
	case item.Result == ItemFailed:
		o.Failed++
	case item.Action == ActionUnchanged:
		o.Unchanged++
	case item.Action == ActionUpdated:
		o.Updated++
	default:
		o.Created++
	}
	if list && len(o.Items) < DryRunNamesPerType {
		if len(item.Reason) > DryRunReasonBytes {
			item.Reason = item.Reason[:DryRunReasonBytes] + "..."
		}
		o.Items = append(o.Items, item)
	}
}

// DryRunModifier is one resource modifier rule and the objects it would
// change: how many, and the first.
type DryRunModifier struct {
	Rule    string `json:"rule"`
	Objects int    `json:"objects"`
	Sample  string `json:"sample"`
}

// SummarizeRestoreDryRunInput names a restore dry run's scratch name and
// its types in apply order.
type SummarizeRestoreDryRunInput struct {
	Scratch  string   `json:"scratch"`
	Location string   `json:"location"`
	Order    []string `json:"order,omitempty"`
}
