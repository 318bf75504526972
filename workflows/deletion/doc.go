// Package deletion holds the deletion of a backup or etcd snapshot
// (DeleteBackup), the expiry of those past their TTL (ExpireBackups) and
// kopia repository maintenance (RepositoryMaintenance).
package deletion
