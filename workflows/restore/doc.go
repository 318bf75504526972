// Package restore holds the Restore workflow: plan, apply type by type,
// relink owners, restore volumes through VolumeRestore children, finalize.
package restore
