package restore

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// SummarizeRestoreDryRun reads the outcomes a restore's dry run stored
// under its scratch name and counts them per type, listing the first
// items of each and which resource modifier rules changed what. It only
// reads.
func (a *Activities) SummarizeRestoreDryRun(ctx context.Context, in v1alpha1.SummarizeRestoreDryRunInput) (*v1alpha1.RestoreDryRun, error) {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Scratch, "", in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	sum := &v1alpha1.RestoreDryRun{Resources: map[string]v1alpha1.DryRunTypeOutcome{}}
	modifiers := map[string]int{}
	listed := 0
	add := func(line []byte) error {
		var o v1alpha1.ItemOutcome
		if err := json.Unmarshal(line, &o); err != nil {
			return fmt.Errorf("decode outcome: %w", err)
		}
		t := sum.Resources[o.Resource]
		before := len(t.Items)
		t.Add(o, listed < v1alpha1.DryRunItems)
		listed += len(t.Items) - before
		sum.Resources[o.Resource] = t
		for _, rule := range o.Modifiers {
			if modifiers[rule] == 0 {
				modifiers[rule] = len(sum.Modifiers) + 1
				sum.Modifiers = append(sum.Modifiers, v1alpha1.DryRunModifier{Rule: rule, Sample: sampleName(o)})
			}
			sum.Modifiers[modifiers[rule]-1].Objects++
		}
		return nil
	}
	if err := writeOutcomes(ctx, run, run.Restore, in.Order, add); err != nil {
		return nil, err
	}
	keys, err := run.Loc.Keys(ctx, run.Restore.AllExtensionOperations())
	if err != nil {
		return nil, err
	}
	for _, key := range keys {
		if err := run.Loc.ReadLines(ctx, key, func([]byte) error { sum.ExtensionOperations++; return nil }); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

// sampleName names an item as kubectl does: resource, namespace/name.
func sampleName(o v1alpha1.ItemOutcome) string {
	if o.Namespace == "" {
		return o.Resource + " " + o.Name
	}
	return o.Resource + " " + o.Namespace + "/" + o.Name
}

// DiscardRestoreDryRun removes everything a restore's dry run wrote
// under its scratch name, logs included.
func (a *Activities) DiscardRestoreDryRun(ctx context.Context, in v1alpha1.SummarizeRestoreDryRunInput) error {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Scratch, "", in.Location)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	// Not run.End(): its log chunk would land in the prefix removed.
	defer func() { _ = run.Loc.Close() }()
	return run.Loc.DeletePrefix(ctx, run.Restore.Prefix(), runlog.Heartbeat(ctx))
}
