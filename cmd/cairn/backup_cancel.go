package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newBackupCancelCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel NAME",
		Short: "Cancel a running backup; it removes its partial data and ends Canceled",
		Args:  exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, tc, err := g.starterClient()
			if err != nil {
				return err
			}
			defer tc.Close()
			if _, err := sc.CancelBackup(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Cancel requested for backup %q; it cleans up and ends Canceled.\n", args[0])
			return nil
		},
	}
}
