package v1alpha1

// DeleteBackupRequest asks to delete one backup's data from its location.
type DeleteBackupRequest struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	// Reason is why: "requested", "expired" or "retention".
	Reason string `json:"reason"`
	// Kind is KindBackup (when empty) or KindEtcdSnapshot.
	Kind string `json:"kind,omitempty"`
}

// DeleteBackupResult says what a deletion removed.
type DeleteBackupResult struct {
	Backup         string `json:"backup"`
	ObjectsDeleted int    `json:"objectsDeleted"`
}

// ExpireBackupsRequest names the location whose expired backups to delete.
// A run deletes one page of them and continues as new with the next, so
// its history and payloads stay bounded however many have expired.
type ExpireBackupsRequest struct {
	Location string `json:"location"`
	// Limit is the page: how many names one listing returns at most (0:
	// DefaultExpirePage).
	Limit int `json:"limit,omitempty"`
	// EtcdSnapshots: the backups are done, this run expires etcd
	// snapshots.
	EtcdSnapshots bool `json:"etcdSnapshots,omitempty"`
	// After is where the listing goes on: names after it, in name order.
	// One whose deletion failed is behind it, so a run never comes back
	// to it; the next expiry tries it again.
	After string `json:"after,omitempty"`
	// Deleted and Failed count what the runs before this one did.
	Deleted int `json:"deleted,omitempty"`
	Failed  int `json:"failed,omitempty"`
}

// DefaultExpirePage is how many expired backups one expiry run deletes
// before it continues as new.
const DefaultExpirePage = 100

// ExpireBackupsResult lists what the last run of an expiry deleted, and
// counts what all its runs did.
type ExpireBackupsResult struct {
	Deleted []string `json:"deleted"`
	Failed  []string `json:"failed,omitempty"`
	// DeletedTotal and FailedTotal count every run of this expiry.
	DeletedTotal int `json:"deletedTotal"`
	FailedTotal  int `json:"failedTotal"`
}

// DeleteActionsInput asks the extensions registered to delete for a
// backup's items to do so, before anything of the backup is deleted.
type DeleteActionsInput struct {
	Backup   string `json:"backup"`
	Location string `json:"location"`
	// Deletion is the deletion's run ID: a retried step finds the calls
	// it made, and a later deletion of the same backup makes new ones.
	Deletion string `json:"deletion"`
}

// DeleteActionsResult counts the items sent to extensions, and the calls.
type DeleteActionsResult struct {
	Items int `json:"items"`
	Calls int `json:"calls"`
}
