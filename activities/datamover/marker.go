package datamover

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/atomicfile"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// maxMarkerBytes bounds what a marker says: the init container prints it.
const maxMarkerBytes = 4096

// writeMarker writes a pod volume's marker into MarkerDir, where the
// restored pod's init container reads it (world-readable: it runs as
// another user).
func (a *Activities) writeMarker(name, content string) error {
	if a.MarkerDir == "" {
		return temporal.NewNonRetryableApplicationError("this data mover has no --marker-dir", v1alpha1.ErrTypeInvalidSpec, nil)
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("marker %q is not a volume name", name), v1alpha1.ErrTypeInvalidSpec, nil)
	}
	if len(content) > maxMarkerBytes {
		content = content[:maxMarkerBytes]
	}
	if err := atomicfile.Write(filepath.Join(a.MarkerDir, name), []byte(content+"\n"), 0o644); err != nil {
		return fmt.Errorf("write marker %s: %w", name, err)
	}
	return nil
}

// MarkPodVolume tells a restored pod's init container that its volume's
// data will not come, and why: the restore failed or was canceled.
func (a *Activities) MarkPodVolume(ctx context.Context, in v1alpha1.MarkPodVolumeInput) error {
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, in.Restore, "", in.Location)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	if err := a.writeMarker(in.Marker, in.Content); err != nil {
		return err
	}
	run.Log.Info("Pod volume released without its data", zap.String("volume", in.Volume), zap.String("reason", in.Content))
	return nil
}
