package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	cairnloc "github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/starter"
)

// runKind is what the commands shared by backups and restores need to know
// of one kind of run. V is its view, such as *starter.BackupView.
type runKind[V any] struct {
	name     string // "backup" or "restore", as in the workflow ID
	get      func(starter.Service, context.Context, string) (V, error)
	logs     func(starter.Service, context.Context, string, io.Writer) error
	phase    func(V) v1alpha1.Phase
	progress func(V) string // one line for --wait
	describe func(io.Writer, V)
}

// newShowCommand fetches one run and prints it with table, or as JSON or
// YAML.
func newShowCommand[V any](g *globals, k runKind[V], use, short string, table func(io.Writer, V)) *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			sc, closeClient, err := g.starterClient()
			if err != nil {
				return err
			}
			defer closeClient()
			v, err := k.get(sc, cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), v, func(w io.Writer) { table(w, v) })
		},
	}
	out.register(cmd)
	return cmd
}

// newListCommand lists the runs of one kind with table, or as JSON or
// YAML. table gets the default location, to say where it looked.
func newListCommand[L any](g *globals, short string, list func(starter.Service, context.Context) (L, error),
	table func(w io.Writer, l L, location string)) *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   short,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			sc, closeClient, err := g.starterClient()
			if err != nil {
				return err
			}
			defer closeClient()
			l, err := list(sc, cmd.Context())
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), l, func(w io.Writer) { table(w, l, sc.DefaultLocation()) })
		},
	}
	out.register(cmd)
	return cmd
}

// describeTimes prints the rows every description has after the phase:
// when the run started and ended, where it stored its data, its UI link.
func describeTimes(w io.Writer, start, end *time.Time, location, uiURL string) {
	row(w, "Started:", timestamp(start))
	row(w, "Ended:", timestamp(end))
	row(w, "Duration:", duration(start, end))
	if location != "" {
		row(w, "Location:", cairnloc.Display(location))
	}
	if uiURL != "" {
		row(w, "Temporal UI:", uiURL)
	}
}

// describeActingAs says whom a run acts as towards the cluster, when
// Temporal remembers the run (a run known only from its location does not
// say).
func describeActingAs(w io.Writer, source string, id *v1alpha1.Identity) {
	if source == starter.SourceTemporal {
		row(w, "Acting as:", id.Describe())
	}
}

// skippedTable lists the resource types a run left out, with the reason.
func skippedTable(w io.Writer, skipped []v1alpha1.SkippedResource) {
	if len(skipped) == 0 {
		return
	}
	fmt.Fprintln(w)
	row(w, "SKIPPED", "REASON")
	for _, sk := range skipped {
		row(w, sk.Resource, sk.Reason)
	}
}

// printUnreadable lists the runs a list could not read, after its table.
func printUnreadable(w io.Writer, unreadable []string) {
	for _, u := range unreadable {
		fmt.Fprintf(w, "unreadable: %s\n", u)
	}
}

// exactName accepts exactly one NAME argument, as a usage error otherwise.
func exactName(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return &usageError{fmt.Errorf("expected one NAME argument, got %d", len(args))}
	}
	return nil
}

// noArgs refuses any argument, as a usage error: an unknown subcommand of a
// group, or an extra word after a command that takes none.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return &usageError{errors.New(msg)}
}

// retryingRows shows the steps of a running workflow that failed and are
// retried, with their last error.
func retryingRows(w io.Writer, steps []starter.RetryingStep) {
	for _, st := range steps {
		of := ""
		if st.MaxAttempts > 0 {
			of = fmt.Sprintf(" of %d", st.MaxAttempts)
		}
		row(w, "Retrying:", fmt.Sprintf("%s, attempt %d%s, last error: %s", st.Step, st.Attempt, of, st.LastError))
	}
}
