package workflows

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

// BackupDryRun is what a backup would take, as its dry run found it. It
// is bounded by types and volumes: names and warnings are cut at
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
	// Hooks are the pods whose hooks would run.
	Hooks []HookedPod `json:"hooks,omitempty"`
	// Skipped are the resource types the backup would leave out, and why.
	Skipped []SkippedResource `json:"skipped,omitempty"`
	// Warnings are what the backup would warn about, WarningsTotal in
	// all; Errors counts types that would fail.
	Warnings      []string `json:"warnings,omitempty"`
	WarningsTotal int      `json:"warningsTotal"`
	Errors        int      `json:"errors"`
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
