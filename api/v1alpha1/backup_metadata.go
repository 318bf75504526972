package v1alpha1

import "time"

// MetadataAPIVersion and MetadataKind head every backup.json: the
// group and version of the resources, as one API group. Files written
// before 0.1.0 say cairn.dev/v1alpha1; readers go by kind and shape, so
// they read either.
const (
	MetadataAPIVersion = APIGroup + "/v1alpha1"
	MetadataKindBackup = "Backup"
)

// Formats a backup in a location can be written in.
const (
	BackupFormatCairn  = "cairn"  // backup.json and resources.tar.gz
	BackupFormatVelero = "velero" // velero-backup.json and <name>.tar.gz
)

// BackupMetadata is backup.json: written last, its presence marks a
// backup as complete. A fresh install reads it to list the backups that
// are already in a location.
type BackupMetadata struct {
	APIVersion    string       `json:"apiVersion"`
	Kind          string       `json:"kind"`
	Name          string       `json:"name"`
	FormatVersion string       `json:"formatVersion"`
	Format        string       `json:"format,omitempty"` // BackupFormat*; empty in older backup.json files, all cairn's
	Spec          BackupSpec   `json:"spec"`
	Status        BackupStatus `json:"status"`
	WorkflowID    string       `json:"workflowId,omitempty"`
	RunID         string       `json:"runId,omitempty"`
	// EncryptionKeyID is the ID of the key that encrypted what the run
	// wrote besides this document (sealing.KeyID); empty: written in plain.
	EncryptionKeyID string `json:"encryptionKeyID,omitempty"`
	// ManifestSHA256 is the SHA-256 of the backup's manifest.json, which
	// holds the digest of every other object; empty in backups written
	// before manifests (and in Velero's).
	ManifestSHA256 string `json:"manifestSHA256,omitempty"`
	// ImmutableUntil is when the object lock of an immutable location
	// ends for this backup: the store refuses to delete or overwrite it
	// before then, and cairn neither deletes nor expires it.
	ImmutableUntil *time.Time `json:"immutableUntil,omitempty"`
}

// Immutable reports whether the backup is locked at now.
func (m *BackupMetadata) Immutable(now time.Time) bool {
	return m.ImmutableUntil != nil && now.Before(*m.ImmutableUntil)
}

// BackupResults is results.json: what went wrong or was left out, per item
// or per resource type.
type BackupResults struct {
	Errors   []ResultEntry     `json:"errors"`
	Warnings []ResultEntry     `json:"warnings"`
	Skipped  []SkippedResource `json:"skipped,omitempty"`
	// Excluded are the objects an exclusion label (cairn.io/ or
	// velero.io/exclude-from-backup=true) kept out of the backup.
	Excluded []ResultEntry `json:"excluded,omitempty"`
}

// ResultEntry is one error or warning.
type ResultEntry struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Message   string `json:"message"`
}
