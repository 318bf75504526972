package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRestoreCancelCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel NAME",
		Short: "Cancel a running restore; what it already applied stays in the cluster",
		Args:  exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, tc, err := g.starterClient()
			if err != nil {
				return err
			}
			defer tc.Close()
			if _, err := sc.CancelRestore(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Cancel requested for restore %q; it ends Canceled and leaves what it applied.\n"+
				"  What that was: cairn restore results %s\n", args[0], args[0])
			return nil
		},
	}
}
