package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/starter"
)

func newBackupDeleteCommand(g *globals) *cobra.Command {
	var cancelRunning, wait bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a backup's data from its location",
		Long: `Deletes the backup's objects from its location, as Temporal workflow
delete/<name>: backup.json first, so a half-deleted backup is never listed as
complete, then everything else. Deleting is safe to repeat, and a deletion a
worker did not finish is finished by the next one.

A running backup is refused (exit code 3) unless --cancel, which cancels it
and waits for it to stop first. Backups written by Velero are left to Velero.
Backups also go on their own when they expire (--ttl of backup create): the
worker's expiry schedule deletes them the same way.`,
		Example: `  cairn backup delete shop-1 --wait
  cairn backup delete nightly-2 --cancel`,
		Args: exactName,
		RunE: actionRunE(g, func(cmd *cobra.Command, sc starter.Service, name string) (string, error) {
			res, err := sc.DeleteBackup(cmd.Context(), name, cancelRunning)
			if err != nil {
				return "", err
			}
			if !wait {
				msg := fmt.Sprintf("Deletion of backup %q started.", name)
				if res.UIURL != "" {
					msg += "\n  Temporal UI: " + res.UIURL
				}
				return msg, nil
			}
			if err := sc.WaitRun(cmd.Context(), res.WorkflowID, res.RunID); err != nil {
				return "", fmt.Errorf("delete backup %s: %w", name, err)
			}
			return fmt.Sprintf("Backup %q deleted.", name), nil
		}),
	}
	cmd.Flags().BoolVar(&cancelRunning, "cancel", false, "cancel the backup first if it is still running")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the deletion is done")
	return cmd
}
