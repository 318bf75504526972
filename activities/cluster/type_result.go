package cluster

import (
	"context"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// TypeResult is the per-type outcome stored in the location for finalize.
type TypeResult struct {
	Resource string   `json:"resource"`
	Items    int      `json:"items"`
	Errors   []string `json:"errors,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Excluded are objects an exclusion label kept out, the first of
	// ExcludedTotal.
	Excluded      []ExcludedItem `json:"excluded,omitempty"`
	ExcludedTotal int            `json:"excludedTotal,omitempty"`
}

// reports says whether finalize has anything to say of the result.
func (tr TypeResult) reports() bool {
	return len(tr.Errors) > 0 || len(tr.Warnings) > 0 || len(tr.Excluded) > 0 || tr.ExcludedTotal > 0
}

// StoreTypeResult stores the result of the step run took for finalize,
// under key, when it has errors, warnings or exclusions to report. Most
// types have none, and a result stored for each was a write per type on
// every backup's path, one after the other in each collect activity.
// A retried attempt removes instead what an earlier one may have stored
// under key, so the backup's results are those of the attempt that
// finished.
func StoreTypeResult(ctx context.Context, run *runlog.Run, key string, tr TypeResult) error {
	return storeTypeResult(ctx, run.Loc, key, tr, run.Info().Attempt > 1)
}

func storeTypeResult(ctx context.Context, loc *location.Location, key string, tr TypeResult, retry bool) error {
	switch {
	case tr.reports():
		return loc.WriteJSON(ctx, key, tr)
	case retry:
		return loc.Delete(ctx, key)
	}
	return nil
}
