package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/clock"
)

type volumeWaitFlags struct {
	restore  string
	dir      string
	volumes  []string
	interval time.Duration
}

func newVolumeWaitCommand() *cobra.Command {
	f := &volumeWaitFlags{}
	cmd := &cobra.Command{
		Use:   "pod-volume-wait",
		Short: "Hold a restored pod until its volumes' file-system copies are written back (its init container)",
		Long: `A restore puts this command first among the init containers of each pod
whose volumes it writes back from file-system copies. A data mover on the
pod's node writes each volume's data, then a marker file named after the
volume into --dir: "restored", or why the data will not come (the restore
failed or was canceled).

The command exits 0 once every volume in --volumes is restored, so the pod's
containers start with their data. It exits 1 as soon as a marker says a
volume will not be restored, printing why: the pod does not start on empty
volumes, and its log says what happened. Delete the pod to start it without
the data.`,
		Example: `  cairn pod-volume-wait --restore nightly-1 --dir /cairn-restore-wait --volumes cache,files`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.restore == "" || f.dir == "" || len(f.volumes) == 0 {
				return &usageError{fmt.Errorf("--restore, --dir and --volumes are required")}
			}
			return waitForMarkers(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.restore, "restore", "", "the restore writing the volumes (required)")
	fl.StringVar(&f.dir, "dir", v1alpha1.RestoreWaitDir, "the directory of markers, one file per volume")
	fl.StringSliceVar(&f.volumes, "volumes", nil, "the volumes to wait for, comma-separated (required)")
	fl.DurationVar(&f.interval, "interval", time.Second, "how often to look for markers")
	return cmd
}

// waitForMarkers returns once every volume's marker says restored, and
// an error as soon as one says anything else.
func waitForMarkers(ctx context.Context, out io.Writer, f *volumeWaitFlags) error {
	fmt.Fprintf(out, "Waiting for restore %s to write volumes %s back\n", f.restore, strings.Join(f.volumes, ", "))
	pending := append([]string(nil), f.volumes...)
	for {
		var left []string
		for _, v := range pending {
			said, err := readMarker(filepath.Join(f.dir, v))
			switch {
			case err != nil:
				return err
			case said == "":
				left = append(left, v)
			case said == v1alpha1.MarkerRestored:
				fmt.Fprintf(out, "Volume %s restored\n", v)
			default:
				fmt.Fprintf(out, "Volume %s will not be restored: %s\n", v, said)
				return fmt.Errorf("volume %s not restored by restore %s: %s (delete the pod to start it without the data)", v, f.restore, said)
			}
		}
		if pending = left; len(pending) == 0 {
			fmt.Fprintln(out, "Every volume is restored; the pod starts")
			return nil
		}
		if err := clock.Sleep(ctx, f.interval); err != nil {
			return err
		}
	}
}

// readMarker is a marker's first line, "" while there is none.
func readMarker(path string) (string, error) {
	file, err := os.Open(path)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("marker: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(file, 4096))
	_ = file.Close() // read only: nothing to lose
	if err != nil {
		return "", fmt.Errorf("marker %s: %w", path, err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line), nil
}
