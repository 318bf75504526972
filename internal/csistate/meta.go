package csistate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/cairn-backup/cairn/internal/atomicfile"
)

// Volume is a volume's metadata file.
type Volume struct {
	ID            string `json:"id"`
	Name          string `json:"name"` // the CreateVolume request name (the PV's name)
	CapacityBytes int64  `json:"capacityBytes"`
	// SourceSnapshotID or SourceVolumeID is set when the volume was created
	// as a copy of that snapshot or volume.
	SourceSnapshotID string    `json:"sourceSnapshotId,omitempty"`
	SourceVolumeID   string    `json:"sourceVolumeId,omitempty"`
	CreatedAt        time.Time `json:"createdAt"`
}

// Snapshot is a snapshot's metadata file.
type Snapshot struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"` // the CreateSnapshot request name
	SourceVolumeID string    `json:"sourceVolumeId"`
	SizeBytes      int64     `json:"sizeBytes"` // the source volume's capacity
	CreatedAt      time.Time `json:"createdAt"` // when the data was cut
	// ReadyAt is zero until a driver call has seen the snapshot ready.
	ReadyAt time.Time `json:"readyAt,omitzero"`
}

// Ready reports whether the snapshot is ready to use at now when snapshots
// take delay to become ready (Control.SnapshotDelay): once ready, always
// ready.
func (s Snapshot) Ready(now time.Time, delay time.Duration) bool {
	return !s.ReadyAt.IsZero() || !now.Before(s.CreatedAt.Add(delay))
}

// ReadVolume reads the metadata of volume id; a missing volume is an error
// wrapping fs.ErrNotExist.
func (l Layout) ReadVolume(id string) (Volume, error) {
	var v Volume
	if !IsVolumeID(id) {
		return v, fmt.Errorf("csistate: volume %q: %w", id, fs.ErrNotExist)
	}
	err := readJSON(l.VolumeMetaPath(id), &v)
	return v, err
}

// WriteVolume replaces the metadata of volume v.ID atomically; its
// directory must exist.
func (l Layout) WriteVolume(v Volume) error {
	return writeJSON(l.VolumeMetaPath(v.ID), v)
}

// ReadSnapshot reads the metadata of snapshot id; a missing snapshot is an
// error wrapping fs.ErrNotExist.
func (l Layout) ReadSnapshot(id string) (Snapshot, error) {
	var s Snapshot
	if !IsSnapshotID(id) {
		return s, fmt.Errorf("csistate: snapshot %q: %w", id, fs.ErrNotExist)
	}
	err := readJSON(l.SnapshotMetaPath(id), &s)
	return s, err
}

// WriteSnapshot replaces the metadata of snapshot s.ID atomically; its
// directory must exist.
func (l Layout) WriteSnapshot(s Snapshot) error {
	return writeJSON(l.SnapshotMetaPath(s.ID), s)
}

// Volumes lists the volumes by ID.
func (l Layout) Volumes() ([]Volume, error) {
	return list(l.VolumesDir(), l.ReadVolume)
}

// Snapshots lists the snapshots by ID.
func (l Layout) Snapshots() ([]Snapshot, error) {
	return list(l.SnapshotsDir(), l.ReadSnapshot)
}

// list reads the metadata of each entry of dir, skipping entries without
// any (temporary directories, interrupted calls).
func list[T any](dir string, read func(id string) (T, error)) ([]T, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("csistate: %w", err)
	}
	var out []T
	for _, e := range entries {
		m, err := read(e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("csistate: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("csistate: decode %s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("csistate: encode %s: %w", path, err)
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("csistate: %w", err)
	}
	return nil
}
