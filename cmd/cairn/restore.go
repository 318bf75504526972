package main

import (
	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// restores is what the shared get, describe, logs and --wait code needs of
// a restore.
var restores = runKind[*starter.RestoreView]{
	name:     "restore",
	get:      starter.Service.GetRestore,
	logs:     starter.Service.RestoreLogs,
	phase:    func(v *starter.RestoreView) v1alpha1.Phase { return v.Phase },
	progress: restoreProgress,
	describe: describeRestore,
}

func newRestoreCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore",
		Short: "Restore backups into a cluster, and inspect and cancel restores",
		Long: `Restores put the objects of a backup back into a cluster. Each is a Temporal
workflow named restore/<name>; it runs on the cairn worker of the target
cluster (the one its --kubeconfig points at), which reads the backup from the
backup location and applies it. Both cairn backups and backups Velero wrote
into the same location can be restored, by their name.

These commands talk to Temporal (--temporal-address) and read the location, so
restores recorded by another cairn install are listed too. A finished restore
keeps its record (restore.json), its log and every item's outcome
(results.json) in the location, under restores/<name>/.

Exit codes: 0 ok, 1 error, 2 invalid input (nothing started), 3 conflict,
4 not found, 5 restore ended PartiallyFailed, 6 restore ended Failed/Canceled.`,
	}
	cmd.AddCommand(newRestoreCreateCommand(g), newRestoreGetCommand(g), newRestoreListCommand(g),
		newRestoreDescribeCommand(g), newLogsCommand(g, restores), newRestoreResultsCommand(g),
		newRestoreCancelCommand(g))
	return cmd
}
