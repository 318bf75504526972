package main

import (
	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// backups is what the shared get, describe, logs and --wait code needs of
// a backup.
var backups = runKind[*starter.BackupView]{
	name:     "backup",
	get:      starter.Service.GetBackup,
	logs:     starter.Service.BackupLogs,
	phase:    func(v *starter.BackupView) v1alpha1.Phase { return v.Phase },
	progress: backupProgress,
	describe: describeBackup,
}

func newBackupCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Create, inspect, cancel and delete backups",
		Long: `Backups of Kubernetes objects, each a Temporal workflow named backup/<name>.
These commands talk to Temporal (--temporal-address) and read the backup
location, so backups committed by another cairn install are listed too.

Exit codes: 0 ok, 1 error, 2 invalid input (nothing started), 3 conflict,
4 not found, 5 backup ended PartiallyFailed, 6 backup ended Failed/Canceled.`,
	}
	cmd.AddCommand(newBackupCreateCommand(g), newBackupGetCommand(g), newBackupListCommand(g),
		newBackupDescribeCommand(g), newLogsCommand(g, backups), newBackupCancelCommand(g), newBackupDeleteCommand(g),
		newBackupVerifyCommand(g))
	return cmd
}
