package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryCommandRefusesUnexpectedArgs walks the whole command tree: a
// mistyped command must fail, so that a script does not go on as if it had
// worked. A group fails on an unknown subcommand and shows its help when
// called alone; any other command fails on one argument more than it takes.
func TestEveryCommandRefusesUnexpectedArgs(t *testing.T) {
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		name := cmd.CommandPath()
		if cmd.HasSubCommands() {
			t.Run(name, func(t *testing.T) {
				_, err := execute(slices.Concat(path, []string{"nosuchcommand"})...)
				require.ErrorContains(t, err, `unknown command "nosuchcommand" for "`+name+`"`)
				var usage *usageError
				assert.ErrorAs(t, err, &usage, "exit code 2")

				out, err := execute(path...)
				require.NoError(t, err)
				assert.Contains(t, out, "Available Commands:")
			})
			for _, c := range cmd.Commands() {
				walk(c, slices.Concat(path, []string{c.Name()}))
			}
			return
		}
		t.Run(name, func(t *testing.T) {
			_, err := execute(slices.Concat(path, positionalArgs(cmd), []string{"nosuchcommand"})...)
			assert.Error(t, err)
		})
	}
	walk(newRootCommand(), nil)
}

// positionalArgs fills in the arguments cmd's Use names before any flag,
// such as NAME in "create NAME --from-backup BACKUP".
func positionalArgs(cmd *cobra.Command) []string {
	var args []string
	for _, word := range strings.Fields(cmd.Use)[1:] {
		if strings.HasPrefix(word, "-") || strings.HasPrefix(word, "[") {
			break
		}
		args = append(args, "x")
	}
	return args
}

// execute runs a fresh root command with args and returns what it printed.
func execute(args ...string) (string, error) {
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{}, args...)) // not nil, or cobra reads os.Args
	err := root.Execute()
	return out.String(), err
}
