package csi

import (
	"context"
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/objects"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// snapshotPartShard puts the re-collected snapshots after every part
// collection wrote for the same type.
const snapshotPartShard = 99999

// CollectVolumeSnapshots stores the ready VolumeSnapshots and their
// contents, as they are after the operations (ready, with handles and
// sizes), as backup items: one part per type under a fixed name, so a
// retry overwrites instead of adding.
func (a *Activities) CollectVolumeSnapshots(ctx context.Context, in v1alpha1.CollectSnapshotsInput) (*v1alpha1.CollectSnapshotsResult, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()
	snaps := a.Snapshots.SnapshotV1()
	var vsLines, contentLines [][]byte
	for i, op := range in.Operations {
		ns, s := op.Volume.Namespace, op.Snapshot
		vs, err := snaps.VolumeSnapshots(ns).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get volumesnapshot %s/%s: %w", ns, s.Name, err)
		}
		vs.APIVersion, vs.Kind = snapshotGroupVersion, "VolumeSnapshot"
		content, err := snaps.VolumeSnapshotContents().Get(ctx, s.Content, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("get volumesnapshotcontent %s: %w", s.Content, err)
		}
		content.APIVersion, content.Kind = snapshotGroupVersion, "VolumeSnapshotContent"
		for _, obj := range []struct {
			lines *[][]byte
			v     any
		}{{&vsLines, vs}, {&contentLines, content}} {
			line, err := json.Marshal(obj.v)
			if err != nil {
				return nil, fmt.Errorf("encode snapshot %s: %w", s.Name, err)
			}
			*obj.lines = append(*obj.lines, line)
		}
		activity.RecordHeartbeat(ctx, i)
	}
	res := &v1alpha1.CollectSnapshotsResult{Resources: map[string]int{}}
	for gr, lines := range map[string][][]byte{objects.VolumeSnapshotsResource: vsLines, objects.VolumeSnapshotContentsResource: contentLines} {
		var data []byte
		for _, l := range lines {
			data = append(append(data, l...), '\n')
		}
		if err := run.Loc.WriteAll(ctx, run.Keys.Part(gr, snapshotPartShard, 0), data); err != nil {
			return nil, err
		}
		res.Resources[gr] = len(lines)
	}
	run.Log.Info("Collected the volume snapshots after their operations", zap.Int("snapshots", len(vsLines)))
	return res, nil
}
