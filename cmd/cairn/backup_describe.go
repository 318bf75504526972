package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newBackupDescribeCommand(g *globals) *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a backup in detail: phase, counts per resource type, skipped types, errors",
		Args:  exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			sc, tc, err := g.starterClient()
			if err != nil {
				return err
			}
			defer tc.Close()
			v, err := sc.GetBackup(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), v, func(w io.Writer) { describeBackup(w, v) })
		},
	}
	out.register(cmd)
	return cmd
}
