package main

import (
	"fmt"

	"github.com/cairn-backup/cairn/starter"
)

// restoreProgress is the line --wait redraws while a restore runs.
func restoreProgress(v *starter.RestoreView) string {
	s := v.Status
	if s == nil {
		return fmt.Sprintf("%s: %s", v.Name, v.Phase)
	}
	return fmt.Sprintf("%s: %s, %d/%d resource types, %d restored, %d skipped, %d failed of %d",
		v.Name, v.Phase, s.ResourceTypesDone, s.ResourceTypesTotal, s.ItemsRestored, s.ItemsSkipped, s.ItemsFailed, s.ItemsTotal)
}
