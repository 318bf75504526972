package store

import (
	"context"
	"fmt"

	"github.com/tidwall/gjson"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// SummarizeDryRun reads what a dry run's steps wrote under its scratch
// name: every warning, and the names of the related cluster-scoped
// objects of the types asked for. It only reads.
func (a *Activities) SummarizeDryRun(ctx context.Context, in v1alpha1.SummarizeDryRunInput) (*v1alpha1.DryRunSummary, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Scratch, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	results, err := collectResults(ctx, run, nil)
	if err != nil {
		return nil, err
	}
	sum := &v1alpha1.DryRunSummary{Related: map[string][]string{}}
	add := func(prefix string, entries []v1alpha1.ResultEntry) {
		for _, e := range entries {
			if sum.WarningsTotal++; len(sum.Warnings) < v1alpha1.DryRunWarningLines {
				sum.Warnings = append(sum.Warnings, prefix+e.Resource+": "+e.Message)
			}
		}
	}
	add("error: ", results.Errors)
	add("", results.Warnings)
	for _, gr := range in.Related {
		names, err := partNames(ctx, run, gr)
		if err != nil {
			return nil, err
		}
		if len(names) > 0 {
			sum.Related[gr] = names
		}
	}
	return sum, nil
}

// partNames are the names of the first DryRunNamesPerType collected
// objects of a type.
func partNames(ctx context.Context, run *runlog.Run, gr string) ([]string, error) {
	keys, err := run.Loc.Keys(ctx, run.Keys.PartsPrefix(gr))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, key := range keys {
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			if len(names) < v1alpha1.DryRunNamesPerType {
				names = append(names, gjson.GetBytes(line, "metadata.name").String())
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", key, err)
		}
	}
	return names, nil
}

// DiscardDryRun removes everything a dry run wrote under its scratch
// name, its logs included: a dry run leaves nothing in the location.
func (a *Activities) DiscardDryRun(ctx context.Context, in v1alpha1.SummarizeDryRunInput) error {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Scratch, in.Location)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	// Not run.End(): its log chunk would land in the prefix removed.
	defer run.Loc.Close()
	return run.Loc.DeletePrefix(ctx, run.Keys.Prefix(), runlog.Heartbeat(ctx))
}
