// Package csistate is the on-disk contract of the sandbox CSI driver
// (tests/csidriver): where its volumes, snapshots, metadata, control file and
// socket live in its state directory. The driver and the sandbox and test
// code that start it and read its volumes both use it; it has no gRPC in it.
//
// A state directory looks like this:
//
//	<dir>/control.json                  test knobs, see Control
//	<dir>/csi.sock                      the driver's socket, see SocketPath
//	<dir>/volumes/<id>/data/            the volume's files
//	<dir>/volumes/<id>/volume.json      see Volume
//	<dir>/snapshots/<id>/data/          the snapshot's files (a copy)
//	<dir>/snapshots/<id>/snapshot.json  see Snapshot
//
// A volume or snapshot exists once its metadata file does; a data directory
// without one is debris of an interrupted call.
package csistate

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// DriverName is the CSI driver name: the provisioner of the sandbox's
// StorageClass and the driver of its VolumeSnapshotClass.
const DriverName = "csi.sandbox.cairn.io"

// MaxSocketPathLen is the longest unix socket path SocketPath returns: the
// sun_path limit is 108 bytes on Linux (with its NUL) and 104 on macOS and
// the BSDs, so 103 fits everywhere.
const MaxSocketPathLen = 103

// Layout names the files of a state directory. Dir should be absolute.
type Layout struct{ Dir string }

// VolumesDir holds one directory per volume.
func (l Layout) VolumesDir() string { return filepath.Join(l.Dir, "volumes") }

// SnapshotsDir holds one directory per snapshot.
func (l Layout) SnapshotsDir() string { return filepath.Join(l.Dir, "snapshots") }

// VolumeDir is the directory holding the volume's files: what a test writes
// into and what the volume would show when mounted.
func (l Layout) VolumeDir(volumeID string) string {
	return filepath.Join(l.VolumesDir(), volumeID, "data")
}

// VolumeMetaPath is the volume's metadata file (JSON, a Volume).
func (l Layout) VolumeMetaPath(volumeID string) string {
	return filepath.Join(l.VolumesDir(), volumeID, "volume.json")
}

// SnapshotDir is the directory holding the snapshot's files, a copy of its
// source volume's files at the time it was cut.
func (l Layout) SnapshotDir(snapshotID string) string {
	return filepath.Join(l.SnapshotsDir(), snapshotID, "data")
}

// SnapshotMetaPath is the snapshot's metadata file (JSON, a Snapshot).
func (l Layout) SnapshotMetaPath(snapshotID string) string {
	return filepath.Join(l.SnapshotsDir(), snapshotID, "snapshot.json")
}

// ControlPath is the control file, see Control.
func (l Layout) ControlPath() string { return filepath.Join(l.Dir, "control.json") }

// SocketPath is the driver's default unix socket: <dir>/csi.sock when that
// fits in MaxSocketPathLen bytes, else a path of the same length for every
// call with this Dir, in os.TempDir(), named after a hash of Dir. Callers
// that want the socket inside the state directory should keep Dir short (a
// directory from os.MkdirTemp("", "csi") rather than t.TempDir()), or pass
// the driver an explicit --endpoint.
func (l Layout) SocketPath() string {
	if p := filepath.Join(l.Dir, "csi.sock"); len(p) <= MaxSocketPathLen {
		return p
	}
	sum := sha256.Sum256([]byte(l.Dir))
	return filepath.Join(os.TempDir(), "cairn-csi-"+hex.EncodeToString(sum[:8])+".sock")
}

// VolumeID is the ID the driver gives the volume created under the CSI
// request name (the PV's name): a repeated CreateVolume finds the same one.
func VolumeID(name string) string { return "vol-" + nameHash(name) }

// SnapshotID is the ID the driver gives the snapshot created under the CSI
// request name (the VolumeSnapshotContent-derived "snapshot-<uid>").
func SnapshotID(name string) string { return "snap-" + nameHash(name) }

func nameHash(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

// VolumeDirForHandle is the directory holding the files of the volume whose
// PersistentVolume has spec.csi.volumeHandle volumeHandle (the handle is the
// volume ID).
func VolumeDirForHandle(stateDir, volumeHandle string) string {
	return Layout{Dir: stateDir}.VolumeDir(volumeHandle)
}

// SnapshotDirForHandle is the directory holding the files of the snapshot
// whose VolumeSnapshotContent has status.snapshotHandle snapshotHandle.
func SnapshotDirForHandle(stateDir, snapshotHandle string) string {
	return Layout{Dir: stateDir}.SnapshotDir(snapshotHandle)
}

// IsVolumeID reports whether id has the form VolumeID gives; the driver
// treats any other ID as unknown, so a handle never names a path outside
// the state directory.
func IsVolumeID(id string) bool { return hasHashSuffix(id, "vol-") }

// IsSnapshotID reports whether id has the form SnapshotID gives.
func IsSnapshotID(id string) bool { return hasHashSuffix(id, "snap-") }

func hasHashSuffix(id, prefix string) bool {
	if len(id) != len(prefix)+32 || id[:len(prefix)] != prefix {
		return false
	}
	for _, c := range id[len(prefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
