package workflows

// VerifyBackupWorkflowName re-reads a backup and checks every stored
// object against its manifest; KindVerify is its CairnKind.
const (
	VerifyBackupWorkflowName = "VerifyBackup"
	KindVerify               = "verify"
)

// VerifyWorkflowID is the workflow ID of the verification of the backup
// called name: one at a time per backup.
func VerifyWorkflowID(name string) string { return "verify/" + name }

// VerifyBackupRequest names the backup and its location.
type VerifyBackupRequest struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
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
}

// OK says every object matched a manifest.
func (r VerifyBackupResult) OK() bool { return r.Manifest && len(r.Differ) == 0 }
