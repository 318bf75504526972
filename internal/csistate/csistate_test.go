package csistate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestControlRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	want := Control{
		SnapshotDelay:     Duration(1500 * time.Millisecond),
		SnapshotError:     "disk on fire",
		CreateVolumeError: "no space",
	}
	if err := WriteControl(dir, want); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(Layout{Dir: dir}.ControlPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"snapshotDelay": "1.5s"`) {
		t.Errorf("control file does not write the delay as a string:\n%s", data)
	}
	got, err := ReadControl(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("ReadControl = %+v, want %+v", got, want)
	}

	// Overwriting with the zero Control clears every knob.
	if err := WriteControl(dir, Control{}); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadControl(dir); err != nil || got != (Control{}) {
		t.Errorf("after clearing: ReadControl = %+v, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("state dir holds %d entries, want only the control file", len(entries))
	}
}

func TestReadControlMissingIsZero(t *testing.T) {
	got, err := ReadControl(t.TempDir())
	if err != nil || got != (Control{}) {
		t.Errorf("ReadControl of an empty dir = %+v, %v; want zero, nil", got, err)
	}
}

func TestReadControlHandWritten(t *testing.T) {
	for _, tc := range []struct {
		json  string
		delay time.Duration
		bad   bool
	}{
		{json: `{"snapshotDelay": "30s"}`, delay: 30 * time.Second},
		{json: `{"snapshotDelay": ""}`},
		{json: `{"snapshotDelay": 2000000000}`, delay: 2 * time.Second},
		{json: `{}`},
		{json: `{"snapshotDelay": "soon"}`, bad: true},
		{json: `{"snapshotDelay": true}`, bad: true},
		{json: `not json`, bad: true},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(Layout{Dir: dir}.ControlPath(), []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadControl(dir)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: no error", tc.json)
			}
			continue
		}
		if err != nil || got.SnapshotDelay.D() != tc.delay {
			t.Errorf("%s: ReadControl = %+v, %v; want delay %v", tc.json, got, err, tc.delay)
		}
	}
}

func TestSocketPathFits(t *testing.T) {
	short := Layout{Dir: "/tmp/csi123"}
	if got := short.SocketPath(); got != "/tmp/csi123/csi.sock" {
		t.Errorf("SocketPath = %q, want it in the state dir", got)
	}
	long := Layout{Dir: "/tmp/" + strings.Repeat("d", 120)}
	got := long.SocketPath()
	if len(got) > MaxSocketPathLen {
		t.Errorf("SocketPath = %q (%d bytes), longer than %d", got, len(got), MaxSocketPathLen)
	}
	if got != long.SocketPath() || got == (Layout{Dir: long.Dir + "x"}).SocketPath() {
		t.Errorf("SocketPath of a long dir is not a stable per-dir path: %q", got)
	}
}

func TestIDs(t *testing.T) {
	v, s := VolumeID("pvc-1"), SnapshotID("snapshot-1")
	if v != VolumeID("pvc-1") || v == VolumeID("pvc-2") || !IsVolumeID(v) || IsSnapshotID(v) {
		t.Errorf("VolumeID = %q", v)
	}
	if !IsSnapshotID(s) || IsVolumeID(s) {
		t.Errorf("SnapshotID = %q", s)
	}
	for _, bad := range []string{"", "vol-", "../../etc", "vol-" + strings.Repeat("g", 32), "vol-" + strings.Repeat("a", 33)} {
		if IsVolumeID(bad) {
			t.Errorf("IsVolumeID(%q) = true", bad)
		}
	}
	if got, want := VolumeDirForHandle("/s", v), "/s/volumes/"+v+"/data"; got != want {
		t.Errorf("VolumeDirForHandle = %q, want %q", got, want)
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	now := time.Now().UTC().Truncate(time.Millisecond)
	vol := Volume{ID: VolumeID("pvc-1"), Name: "pvc-1", CapacityBytes: 1 << 30, CreatedAt: now}
	snap := Snapshot{ID: SnapshotID("s"), Name: "s", SourceVolumeID: vol.ID, SizeBytes: 1 << 30, CreatedAt: now}
	for _, d := range []string{filepath.Dir(l.VolumeMetaPath(vol.ID)), filepath.Dir(l.SnapshotMetaPath(snap.ID))} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A directory without metadata (an interrupted call) is not listed.
	if err := os.MkdirAll(l.VolumeDir(VolumeID("half")), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteVolume(vol); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	vols, err := l.Volumes()
	if err != nil || len(vols) != 1 || vols[0] != vol {
		t.Errorf("Volumes = %+v, %v; want [%+v]", vols, err, vol)
	}
	snaps, err := l.Snapshots()
	if err != nil || len(snaps) != 1 || snaps[0] != snap {
		t.Errorf("Snapshots = %+v, %v; want [%+v]", snaps, err, snap)
	}
	if data, _ := os.ReadFile(l.SnapshotMetaPath(snap.ID)); strings.Contains(string(data), "readyAt") {
		t.Errorf("unready snapshot metadata has a readyAt:\n%s", data)
	}
	if snap.Ready(now.Add(time.Second), 2*time.Second) || !snap.Ready(now.Add(2*time.Second), 2*time.Second) {
		t.Error("Ready ignores the delay")
	}
	snap.ReadyAt = now
	if !snap.Ready(now, time.Hour) {
		t.Error("a snapshot seen ready is not ready after the delay grew")
	}
}
