package v1alpha1

// VerifyWorkflowID is the workflow ID of the verification of the backup
// called name: one at a time per backup.
func VerifyWorkflowID(name string) string { return "verify/" + name }

// VerifyBackupRequest names the backup and its location. Full reads
// every file of the moved volume data back, instead of a sample.
type VerifyBackupRequest struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	Full     bool   `json:"full,omitempty"`
}

// VerifySamplePercent is the share of volume data files a verification
// reads back whole unless it is full; every file's contents are checked
// to exist either way.
const VerifySamplePercent = 5

// VolumeDataVerified is what kopia's check of a backup's moved volume
// data found.
type VolumeDataVerified struct {
	Snapshots int   `json:"snapshots"`
	Files     int64 `json:"files"`
	Bytes     int64 `json:"bytes"`
	ReadFiles int64 `json:"readFiles"`
	ReadBytes int64 `json:"readBytes"`
	// Errors are kopia's: contents or blobs missing, data unreadable.
	Errors []string `json:"errors,omitempty"`
}

// VerifyBackupResult is the verdict of a verification.
type VerifyBackupResult struct {
	Backup string `json:"backup"`
	// Manifest is false for a backup that has none (Velero's, or cairn's
	// from before manifests): nothing was checked.
	Manifest bool `json:"manifest"`
	// Objects and Bytes are what was read and checked.
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
	// Differ are the objects that are not what the manifest says, each
	// with how ("resources.tar.gz: SHA-256 differs"); empty when all match.
	Differ []string `json:"differ,omitempty"`
	// VolumeData is kopia's check of the moved volume data; nil when the
	// backup moved none.
	VolumeData *VolumeDataVerified `json:"volumeData,omitempty"`
}

// OK says every object matched a manifest and the volume data is whole.
func (r VerifyBackupResult) OK() bool {
	return r.Manifest && len(r.Differ) == 0 && (r.VolumeData == nil || len(r.VolumeData.Errors) == 0)
}
