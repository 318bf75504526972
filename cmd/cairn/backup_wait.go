package main

import (
	"fmt"

	"github.com/cairn-backup/cairn/starter"
)

// backupProgress is the line --wait redraws while a backup runs.
func backupProgress(v *starter.BackupView) string {
	s := v.Status
	if s == nil {
		return fmt.Sprintf("%s: %s", v.Name, v.Phase)
	}
	items := fmt.Sprintf("%d items", s.ItemsDone)
	if s.ItemsEstimate > 0 {
		items = fmt.Sprintf("%d of ~%d items", s.ItemsDone, s.ItemsEstimate)
	}
	return fmt.Sprintf("%s: %s, %d/%d resource types, %s, %d errors, %d warnings",
		v.Name, v.Phase, s.ResourceTypesDone, s.ResourceTypesTotal, items, s.Errors, s.Warnings)
}
