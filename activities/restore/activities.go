// Package restore holds the activities of a restore: plan (read the
// backup, choose versions for the target cluster, write prepared items in
// batches), apply (create or update one resource type, batch by batch),
// wait for restored CRDs, relink owner references, finalize and clean up.
package restore

import (
	"time"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// Activities holds what the restore activities share.
type Activities struct {
	Clients *kube.Clients
	Log     *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener
	// BatchInterval is a pause after every applied batch, to spare a busy
	// API server at the cost of a longer restore (0: no pause).
	BatchInterval time.Duration
	// TarballLimits bound what a restore reads of a backup's tarball (zero:
	// the defaults).
	TarballLimits tarball.Limits
	// ConfigNamespace is the worker's namespace, where Velero's
	// change-storage-class ConfigMaps are read from ("": none are).
	ConfigNamespace string
}

// Item is one line of a batch: an object prepared for the target cluster
// and what the apply step needs to know about it.
type Item struct {
	Object map[string]any `json:"object"`
	// RestoredOwners are the UIDs (in the backup) of owners restored in
	// this run; references to other owners are kept only if they exist.
	RestoredOwners []string `json:"restoredOwners,omitempty"`
	// SourceNamespace is the backed-up namespace when it was mapped.
	SourceNamespace string `json:"sourceNamespace,omitempty"`
	// Modifiers are the resource modifier rules that changed the object.
	Modifiers []string `json:"modifiers,omitempty"`
	// EnsureOnly marks a namespace the restore needs but the backup does
	// not hold: created when missing, fine as it is when present.
	EnsureOnly bool `json:"ensureOnly,omitempty"`
}
