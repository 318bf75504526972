package backup

import (
	"go.temporal.io/sdk/workflow"
)

// versionBaseline marks the runs that take each change below at the
// version it had when the baseline was drawn, without asking for it.
// Temporal's SDK writes a marker and a search-attribute upsert into a new
// run's history for every change ID it asks for: five of them were 10 of
// a small backup's 55 events, and each upsert is a write to the
// visibility store. A run that started before the baseline has no marker
// for it, and asks for each change ID as it did. A later change asks for
// a change ID of its own, as before.
//
// At the baseline, a run also publishes its phase once, InProgress, where
// it published New and then InProgress in the same workflow task.
const versionBaseline = "backup-baseline"

// atBaseline are the versions a run at versionBaseline takes.
var atBaseline = map[string]workflow.Version{
	versionPlanBesideCollect:   1,
	versionNamespaceShares:     1,
	versionSmallTypesFirst:     smallTypesTogether,
	versionFinalizeRemovesWork: 1,
	versionPodVolumes:          1,
}

// takeBaseline asks whether the run is at versionBaseline: the first
// thing a run does, before any change ID the baseline stands for.
func (b *backupRun) takeBaseline(ctx workflow.Context) {
	b.baseline = workflow.GetVersion(ctx, versionBaseline, workflow.DefaultVersion, 1) == 1
}

// version is the version of changeID the run takes: the baseline's, or
// what GetVersion answers (up to max) for a run from before it. A run at
// the baseline takes the baseline's version whatever max says, and its
// history has no marker to tell another: a further change to a step the
// baseline stands for needs a change ID of its own.
func (b *backupRun) version(ctx workflow.Context, changeID string, max workflow.Version) workflow.Version {
	if v, ok := atBaseline[changeID]; ok && b.baseline {
		return v
	}
	return workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, max)
}
