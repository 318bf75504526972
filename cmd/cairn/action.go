package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/starter"
)

// actionRunE is the RunE of a command that does one thing to NAME (cancel,
// pause, delete) and says what it did: do returns that message.
func actionRunE(g *globals, do func(cmd *cobra.Command, sc starter.Service, name string) (string, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		sc, closeClient, err := g.starterClient()
		if err != nil {
			return err
		}
		defer closeClient()
		msg, err := do(cmd, sc, args[0])
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), msg)
		return nil
	}
}
