package workflows

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
type ExpireBackupsRequest struct {
	Location string `json:"location"`
}

// ExpireBackupsResult lists what one garbage-collection run deleted.
type ExpireBackupsResult struct {
	Deleted []string `json:"deleted"`
	Failed  []string `json:"failed,omitempty"`
}
