package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/starter"
)

func newRestoreCancelCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel NAME",
		Short: "Cancel a running restore; what it already applied stays in the cluster",
		Args:  exactName,
		RunE: actionRunE(g, func(cmd *cobra.Command, sc starter.Service, name string) (string, error) {
			if _, err := sc.CancelRestore(cmd.Context(), name); err != nil {
				return "", err
			}
			return fmt.Sprintf("Cancel requested for restore %q; it ends Canceled and leaves what it applied.\n"+
				"  What that was: cairn restore results %s", name, name), nil
		}),
	}
}
