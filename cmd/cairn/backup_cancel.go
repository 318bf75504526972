package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/starter"
)

func newBackupCancelCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel NAME",
		Short: "Cancel a running backup; it removes its partial data and ends Canceled",
		Args:  exactName,
		RunE: actionRunE(g, func(cmd *cobra.Command, sc starter.Service, name string) (string, error) {
			if _, err := sc.CancelBackup(cmd.Context(), name); err != nil {
				return "", err
			}
			return fmt.Sprintf("Cancel requested for backup %q; it cleans up and ends Canceled.", name), nil
		}),
	}
}
