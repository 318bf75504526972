package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/workflows"
)

// waitForBackup shows progress on stderr until the backup ends, prints its
// description, and maps its final phase to the exit code.
func waitForBackup(cmd *cobra.Command, sc *starter.Client, name string, out *outputFlag) error {
	ctx := cmd.Context()
	progress := cmd.ErrOrStderr()
	redraw := false
	if f, ok := progress.(*os.File); ok {
		redraw = isTerminal(f)
	}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	last := ""
	var v *starter.BackupView
	for {
		var err error
		v, err = sc.GetBackup(ctx, name)
		if err != nil {
			return err
		}
		if line := progressLine(v); line != last {
			if redraw {
				fmt.Fprintf(progress, "\r\033[K%s", line)
			} else {
				fmt.Fprintln(progress, line)
			}
			last = line
		}
		if v.Phase.Done() {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(progress)
			return fmt.Errorf("stopped waiting; the backup goes on (cairn backup describe %s): %w", name, ctx.Err())
		case <-ticker.C:
		}
	}
	if redraw {
		fmt.Fprintln(progress)
	}
	if err := out.print(cmd.OutOrStdout(), v, func(w io.Writer) { describeBackup(w, v) }); err != nil {
		return err
	}
	switch v.Phase {
	case workflows.PhaseCompleted:
		return nil
	case workflows.PhasePartiallyFailed:
		return &exitError{code: starter.ExitPartiallyFailed}
	}
	return &exitError{code: starter.ExitFailed}
}

func progressLine(v *starter.BackupView) string {
	s := v.Status
	if s == nil {
		return fmt.Sprintf("%s: %s", v.Name, v.Phase)
	}
	items := fmt.Sprintf("%d items", s.ItemsDone)
	if s.ItemsEstimate > 0 {
		items = fmt.Sprintf("%d of ~%d items", s.ItemsDone, s.ItemsEstimate)
	}
	return fmt.Sprintf("%s: %s, %d/%d resource types, %s, %d errors, %d warnings",
		v.Name, v.Phase, s.ResourceTypesDone, s.ResourceTypesTotal, items, s.Errors, s.Warnings)
}
