// Package backup holds the Backup workflow, which plans, collects and
// finalizes one backup and runs its volumes' snapshots as children, and
// ValidateFilters.
package backup
