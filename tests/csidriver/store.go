package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-backup/cairn/internal/csistate"
)

// store keeps volumes and snapshots as directories in a csistate layout.
// It knows nothing of CSI; its callers serialize calls.
//
// A volume or snapshot is built in a temporary directory, renamed into
// place, and only then given its metadata file, which is what makes it
// exist: a crash leaves either nothing or debris that is not listed and is
// replaced on the next attempt.
type store struct {
	layout csistate.Layout
}

const tmpPrefix = ".tmp-"

// openStore creates the state directory's folders and removes the temporary
// directories of interrupted calls.
func openStore(dir string) (*store, error) {
	s := &store{layout: csistate.Layout{Dir: dir}}
	for _, d := range []string{s.layout.VolumesDir(), s.layout.SnapshotsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				if err := removeTree(filepath.Join(d, e.Name())); err != nil {
					return nil, err
				}
			}
		}
	}
	return s, nil
}

func (s *store) control() (csistate.Control, error) {
	return csistate.ReadControl(s.layout.Dir)
}

// volume returns the metadata of volume id and whether it exists.
func (s *store) volume(id string) (csistate.Volume, bool, error) {
	v, err := s.layout.ReadVolume(id)
	if errors.Is(err, fs.ErrNotExist) {
		return v, false, nil
	}
	return v, err == nil, err
}

// snapshot returns the metadata of snapshot id and whether it exists.
func (s *store) snapshot(id string) (csistate.Snapshot, bool, error) {
	snap, err := s.layout.ReadSnapshot(id)
	if errors.Is(err, fs.ErrNotExist) {
		return snap, false, nil
	}
	return snap, err == nil, err
}

// createVolume makes volume v with a copy of the directory from as its
// data, or an empty one if from is "".
func (s *store) createVolume(v csistate.Volume, from string) error {
	err := place(s.layout.VolumesDir(), v.ID, func(data string) error {
		if from == "" {
			return os.Mkdir(data, 0o755)
		}
		return copyTree(from, data)
	})
	if err != nil {
		return fmt.Errorf("create volume %s: %w", v.ID, err)
	}
	return s.layout.WriteVolume(v)
}

// cutSnapshot makes snapshot snap with a copy of its source volume's data.
func (s *store) cutSnapshot(snap csistate.Snapshot) error {
	err := place(s.layout.SnapshotsDir(), snap.ID, func(data string) error {
		return copyTree(s.layout.VolumeDir(snap.SourceVolumeID), data)
	})
	if err != nil {
		return fmt.Errorf("cut snapshot %s: %w", snap.ID, err)
	}
	return s.layout.WriteSnapshot(snap)
}

func (s *store) writeSnapshot(snap csistate.Snapshot) error {
	return s.layout.WriteSnapshot(snap)
}

func (s *store) snapshots() ([]csistate.Snapshot, error) {
	return s.layout.Snapshots()
}

// deleteVolume removes volume id; a missing one is not an error. The
// metadata goes first, so an interrupted delete leaves unlisted debris.
func (s *store) deleteVolume(id string) error {
	if !csistate.IsVolumeID(id) {
		return nil // never a path outside the state directory
	}
	return remove(s.layout.VolumeMetaPath(id))
}

// deleteSnapshot removes snapshot id like deleteVolume.
func (s *store) deleteSnapshot(id string) error {
	if !csistate.IsSnapshotID(id) {
		return nil
	}
	return remove(s.layout.SnapshotMetaPath(id))
}

func remove(metaPath string) error {
	if err := os.Remove(metaPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return removeTree(filepath.Dir(metaPath))
}

// place builds <parent>/<id>/data by calling fill on a path in a temporary
// directory and renames that directory to <parent>/<id>, replacing debris
// of an earlier attempt.
func place(parent, id string, fill func(data string) error) error {
	tmp, err := os.MkdirTemp(parent, tmpPrefix+id+"-")
	if err != nil {
		return err
	}
	defer removeTree(tmp) // nothing left to remove after the rename
	if err := fill(filepath.Join(tmp, "data")); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	final := filepath.Join(parent, id)
	if err := removeTree(final); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}
