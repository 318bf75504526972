package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print cairn's version and the Temporal SDK it was built with",
		Args:  noArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			sdk := "unknown"
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, dep := range info.Deps {
					if dep.Path == "go.temporal.io/sdk" {
						sdk = dep.Version
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cairn %s (temporal sdk %s)\n", version, sdk)
		},
	}
}
