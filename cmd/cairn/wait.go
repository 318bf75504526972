package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// waitFor shows the run's progress on stderr until it ends, prints its
// description, and maps its final phase to the exit code.
func waitFor[V any](cmd *cobra.Command, sc starter.Service, k runKind[V], name string, out *outputFlag) error {
	ctx := cmd.Context()
	progress := cmd.ErrOrStderr()
	redraw := false
	if f, ok := progress.(*os.File); ok {
		redraw = isTerminal(f)
	}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	last := ""
	var v V
	for {
		var err error
		v, err = k.get(sc, ctx, name)
		if err != nil {
			return err
		}
		if line := k.progress(v); line != last {
			if redraw {
				fmt.Fprintf(progress, "\r\033[K%s", line)
			} else {
				fmt.Fprintln(progress, line)
			}
			last = line
		}
		if k.phase(v).Done() {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(progress)
			return fmt.Errorf("stopped waiting; the %s goes on (cairn %s describe %s): %w", k.name, k.name, name, ctx.Err())
		case <-ticker.C:
		}
	}
	if redraw {
		fmt.Fprintln(progress)
	}
	if err := out.print(cmd.OutOrStdout(), v, func(w io.Writer) { k.describe(w, v) }); err != nil {
		return err
	}
	switch k.phase(v) {
	case v1alpha1.PhaseCompleted:
		return nil
	case v1alpha1.PhasePartiallyFailed:
		return &exitError{code: starter.ExitPartiallyFailed}
	}
	return &exitError{code: starter.ExitFailed}
}

// isTerminal reports whether f is a terminal, to redraw progress in place.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
