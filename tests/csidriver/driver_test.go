package main

import (
	"errors"
	"io/fs"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cairn-backup/cairn/internal/csistate"
)

// client is a connection to a driver serving in-process.
type client struct {
	csi.IdentityClient
	csi.ControllerClient
	csi.NodeClient
	layout csistate.Layout
}

// startTest serves a driver on a fresh state directory. The directory comes
// from os.MkdirTemp rather than t.TempDir so that its socket path stays
// short.
func startTest(t *testing.T) *client {
	t.Helper()
	return startTestWith(t, config{nodeID: "node-1"})
}

// startTestWith starts a driver of cfg on a state directory of its own.
func startTestWith(t *testing.T, cfg config) *client {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeTree(dir) })
	cfg.stateDir = dir
	d, err := startDriver(cfg, log.New(testWriter{t}, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stop)
	conn, err := grpc.NewClient("unix://"+d.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &client{
		IdentityClient:   csi.NewIdentityClient(conn),
		ControllerClient: csi.NewControllerClient(conn),
		NodeClient:       csi.NewNodeClient(conn),
		layout:           csistate.Layout{Dir: dir},
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

var mountCaps = []*csi.VolumeCapability{{
	AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}}

func (c *client) createVolume(t *testing.T, name string, src *csi.VolumeContentSource) *csi.Volume {
	t.Helper()
	resp, err := c.CreateVolume(t.Context(), &csi.CreateVolumeRequest{
		Name:                name,
		CapacityRange:       &csi.CapacityRange{RequiredBytes: 5 << 20},
		VolumeCapabilities:  mountCaps,
		VolumeContentSource: src,
	})
	if err != nil {
		t.Fatalf("CreateVolume %s: %v", name, err)
	}
	return resp.GetVolume()
}

func (c *client) createSnapshot(t *testing.T, name, volumeID string) *csi.Snapshot {
	t.Helper()
	resp, err := c.CreateSnapshot(t.Context(), &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: volumeID})
	if err != nil {
		t.Fatalf("CreateSnapshot %s: %v", name, err)
	}
	return resp.GetSnapshot()
}

func fromSnapshot(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id},
	}}
}

func wantCode(t *testing.T, err error, code codes.Code, what string) {
	t.Helper()
	if status.Code(err) != code {
		t.Errorf("%s: error %v, want code %s", what, err, code)
	}
}

// entry is what treeOf records of a file.
type entry struct {
	mode  fs.FileMode
	data  string // a file's contents or a symlink's target
	mtime int64  // not for symlinks
}

// treeOf records every file under dir by relative path.
func treeOf(t *testing.T, dir string) map[string]entry {
	t.Helper()
	tree := map[string]entry{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		e := entry{mode: info.Mode()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			e.data, err = os.Readlink(path)
		case info.Mode().IsRegular():
			var b []byte
			b, err = os.ReadFile(path)
			e.data, e.mtime = string(b), info.ModTime().UnixNano()
		default:
			e.mtime = info.ModTime().UnixNano()
		}
		rel, _ := filepath.Rel(dir, path)
		tree[rel] = e
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func compareTrees(t *testing.T, what string, got, want map[string]entry) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: %s missing", what, p)
		} else if g != w {
			t.Errorf("%s: %s is %+v, want %+v", what, p, g, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: unexpected %s", what, p)
		}
	}
}

func writeFile(t *testing.T, path, data string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func TestSnapshotIsPointInTime(t *testing.T) {
	c := startTest(t)
	vol := c.createVolume(t, "pvc-a", nil)
	if vol.GetVolumeId() != csistate.VolumeID("pvc-a") || vol.GetCapacityBytes() != 5<<20 {
		t.Fatalf("CreateVolume = %v", vol)
	}
	data := csistate.VolumeDirForHandle(c.layout.Dir, vol.GetVolumeId())
	writeFile(t, filepath.Join(data, "a.txt"), "alpha\n", 0o644)
	writeFile(t, filepath.Join(data, "secret"), "hush", 0o600)
	writeFile(t, filepath.Join(data, "sub", "deep", "b.bin"), string([]byte{0, 1, 2, 255}), 0o755)
	if err := os.Symlink("sub/deep/b.bin", filepath.Join(data, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(data, "locked"), 0o500); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(filepath.Join(data, "a.txt"), past, past); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, data)

	snap := c.createSnapshot(t, "snapshot-1", vol.GetVolumeId())
	if !snap.GetReadyToUse() || snap.GetSizeBytes() != 5<<20 || snap.GetSourceVolumeId() != vol.GetVolumeId() ||
		snap.GetSnapshotId() != csistate.SnapshotID("snapshot-1") || snap.GetCreationTime() == nil {
		t.Fatalf("CreateSnapshot = %v", snap)
	}

	// Change the volume after the snapshot.
	writeFile(t, filepath.Join(data, "a.txt"), "changed\n", 0o644)
	writeFile(t, filepath.Join(data, "new.txt"), "new", 0o644)
	if err := os.Remove(filepath.Join(data, "secret")); err != nil {
		t.Fatal(err)
	}
	after := treeOf(t, data)

	compareTrees(t, "snapshot", treeOf(t, c.layout.SnapshotDir(snap.GetSnapshotId())), before)
	restored := c.createVolume(t, "pvc-restored", fromSnapshot(snap.GetSnapshotId()))
	if restored.GetContentSource().GetSnapshot().GetSnapshotId() != snap.GetSnapshotId() {
		t.Errorf("restored volume's content source = %v", restored.GetContentSource())
	}
	compareTrees(t, "volume from snapshot", treeOf(t, c.layout.VolumeDir(restored.GetVolumeId())), before)

	clone := c.createVolume(t, "pvc-clone", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
		Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: vol.GetVolumeId()},
	}})
	if clone.GetContentSource().GetVolume().GetVolumeId() != vol.GetVolumeId() {
		t.Errorf("clone's content source = %v", clone.GetContentSource())
	}
	compareTrees(t, "clone", treeOf(t, c.layout.VolumeDir(clone.GetVolumeId())), after)

	// Volumes with read-only directories delete too.
	for _, id := range []string{vol.GetVolumeId(), restored.GetVolumeId(), clone.GetVolumeId()} {
		if _, err := c.DeleteVolume(t.Context(), &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Errorf("DeleteVolume %s: %v", id, err)
		}
	}
	if _, err := c.DeleteSnapshot(t.Context(), &csi.DeleteSnapshotRequest{SnapshotId: snap.GetSnapshotId()}); err != nil {
		t.Errorf("DeleteSnapshot: %v", err)
	}
	for _, d := range []string{c.layout.VolumesDir(), c.layout.SnapshotsDir()} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Errorf("%s still holds %d entries", d, len(entries))
		}
	}
}

func TestIdempotence(t *testing.T) {
	c := startTest(t)
	ctx := t.Context()
	vol := c.createVolume(t, "pvc-a", nil)
	writeFile(t, filepath.Join(c.layout.VolumeDir(vol.GetVolumeId()), "f"), "x", 0o644)
	if again := c.createVolume(t, "pvc-a", nil); again.GetVolumeId() != vol.GetVolumeId() || again.GetCapacityBytes() != vol.GetCapacityBytes() {
		t.Errorf("repeated CreateVolume = %v, want %v", again, vol)
	}
	if _, err := os.Stat(filepath.Join(c.layout.VolumeDir(vol.GetVolumeId()), "f")); err != nil {
		t.Errorf("repeated CreateVolume lost the volume's files: %v", err)
	}
	_, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "pvc-a", CapacityRange: &csi.CapacityRange{RequiredBytes: 10 << 20}, VolumeCapabilities: mountCaps,
	})
	wantCode(t, err, codes.AlreadyExists, "CreateVolume of a bigger volume under the same name")
	def, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-default", VolumeCapabilities: mountCaps})
	if err != nil || def.GetVolume().GetCapacityBytes() != defaultCapacity {
		t.Errorf("CreateVolume without a capacity = %v, %v; want %d bytes", def, err, defaultCapacity)
	}

	snap := c.createSnapshot(t, "snapshot-1", vol.GetVolumeId())
	again := c.createSnapshot(t, "snapshot-1", vol.GetVolumeId())
	if again.GetSnapshotId() != snap.GetSnapshotId() || !again.GetCreationTime().AsTime().Equal(snap.GetCreationTime().AsTime()) {
		t.Errorf("repeated CreateSnapshot = %v, want %v", again, snap)
	}
	_, err = c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-1", SourceVolumeId: def.GetVolume().GetVolumeId()})
	wantCode(t, err, codes.AlreadyExists, "CreateSnapshot under the same name of another volume")
	_, err = c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-2", SourceVolumeId: csistate.VolumeID("nope")})
	wantCode(t, err, codes.NotFound, "CreateSnapshot of a missing volume")
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-b", VolumeCapabilities: mountCaps, VolumeContentSource: fromSnapshot(csistate.SnapshotID("nope"))})
	wantCode(t, err, codes.NotFound, "CreateVolume from a missing snapshot")
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-b", VolumeCapabilities: mountCaps, VolumeContentSource: fromSnapshot("../../etc")})
	wantCode(t, err, codes.NotFound, "CreateVolume from a snapshot ID that is a path")

	for range 2 {
		if _, err := c.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.GetSnapshotId()}); err != nil {
			t.Errorf("DeleteSnapshot: %v", err)
		}
		if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId()}); err != nil {
			t.Errorf("DeleteVolume: %v", err)
		}
	}
	for _, id := range []string{"unknown", "../..", csistate.VolumeID("never")} {
		if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Errorf("DeleteVolume %q: %v", id, err)
		}
		if _, err := c.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id}); err != nil {
			t.Errorf("DeleteSnapshot %q: %v", id, err)
		}
	}
	if _, err := os.Stat(c.layout.VolumeDir(vol.GetVolumeId())); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("deleted volume's data: %v", err)
	}
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-b", VolumeCapabilities: mountCaps, VolumeContentSource: fromSnapshot(snap.GetSnapshotId())})
	wantCode(t, err, codes.NotFound, "CreateVolume from a deleted snapshot")
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{VolumeCapabilities: mountCaps})
	wantCode(t, err, codes.InvalidArgument, "CreateVolume without a name")
}

// testClock is a driver's clock that moves only when the test says.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestSnapshotDelay(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	c := startTestWith(t, config{nodeID: "node-1", now: clock.Now})
	ctx := t.Context()
	vol := c.createVolume(t, "pvc-a", nil)
	if err := csistate.WriteControl(c.layout.Dir, csistate.Control{SnapshotDelay: csistate.Duration(300 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	snap := c.createSnapshot(t, "snapshot-1", vol.GetVolumeId())
	if snap.GetReadyToUse() {
		t.Fatal("snapshot is ready at once despite the delay")
	}
	if _, err := os.Stat(c.layout.SnapshotDir(snap.GetSnapshotId())); err != nil {
		t.Errorf("a delayed snapshot's data is not cut at once: %v", err)
	}
	_, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-b", VolumeCapabilities: mountCaps, VolumeContentSource: fromSnapshot(snap.GetSnapshotId())})
	wantCode(t, err, codes.Unavailable, "CreateVolume from an unready snapshot")

	listedReady := func() bool {
		t.Helper()
		resp, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snap.GetSnapshotId()})
		if err != nil || len(resp.GetEntries()) != 1 {
			t.Fatalf("ListSnapshots = %v, %v", resp, err)
		}
		return resp.GetEntries()[0].GetSnapshot().GetReadyToUse()
	}
	clock.advance(299 * time.Millisecond)
	if listedReady() {
		t.Fatal("snapshot is ready before its delay has passed")
	}
	clock.advance(time.Millisecond)
	if !listedReady() {
		t.Fatal("snapshot is not ready once its delay has passed")
	}
	if again := c.createSnapshot(t, "snapshot-1", vol.GetVolumeId()); !again.GetReadyToUse() {
		t.Error("CreateSnapshot reports a snapshot ListSnapshots saw ready as unready")
	}

	// A snapshot once ready stays ready when the delay grows; a new one waits.
	if err := csistate.WriteControl(c.layout.Dir, csistate.Control{SnapshotDelay: csistate.Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if again := c.createSnapshot(t, "snapshot-1", vol.GetVolumeId()); !again.GetReadyToUse() {
		t.Error("a ready snapshot became unready when the delay grew")
	}
	if s := c.createSnapshot(t, "snapshot-2", vol.GetVolumeId()); s.GetReadyToUse() {
		t.Error("a new snapshot is ready despite an hour's delay")
	}
	c.createVolume(t, "pvc-b", fromSnapshot(snap.GetSnapshotId()))
}

func TestInjectedErrors(t *testing.T) {
	c := startTest(t)
	ctx := t.Context()
	vol := c.createVolume(t, "pvc-a", nil)
	c.createSnapshot(t, "snapshot-old", vol.GetVolumeId())
	if err := csistate.WriteControl(c.layout.Dir, csistate.Control{SnapshotError: "disk on fire", CreateVolumeError: "no room"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snapshot-new", SourceVolumeId: vol.GetVolumeId()})
	if st := status.Convert(err); st.Code() != codes.Internal || st.Message() != "disk on fire" {
		t.Errorf("CreateSnapshot with SnapshotError: %v, want Internal: disk on fire", err)
	}
	if _, err := os.Stat(filepath.Dir(c.layout.SnapshotDir(csistate.SnapshotID("snapshot-new")))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed snapshot left files: %v", err)
	}
	c.createSnapshot(t, "snapshot-old", vol.GetVolumeId()) // repeats still succeed
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-b", VolumeCapabilities: mountCaps})
	if st := status.Convert(err); st.Code() != codes.Internal || st.Message() != "no room" {
		t.Errorf("CreateVolume with CreateVolumeError: %v, want Internal: no room", err)
	}
	c.createVolume(t, "pvc-a", nil)

	if err := csistate.WriteControl(c.layout.Dir, csistate.Control{}); err != nil {
		t.Fatal(err)
	}
	c.createSnapshot(t, "snapshot-new", vol.GetVolumeId())
}

func TestListSnapshots(t *testing.T) {
	c := startTest(t)
	ctx := t.Context()
	a, b := c.createVolume(t, "pvc-a", nil), c.createVolume(t, "pvc-b", nil)
	s1 := c.createSnapshot(t, "snapshot-1", a.GetVolumeId())
	c.createSnapshot(t, "snapshot-2", a.GetVolumeId())
	c.createSnapshot(t, "snapshot-3", b.GetVolumeId())

	ids := func(req *csi.ListSnapshotsRequest) ([]string, string) {
		t.Helper()
		resp, err := c.ListSnapshots(ctx, req)
		if err != nil {
			t.Fatalf("ListSnapshots(%v): %v", req, err)
		}
		var out []string
		for _, e := range resp.GetEntries() {
			out = append(out, e.GetSnapshot().GetSnapshotId())
		}
		return out, resp.GetNextToken()
	}
	if got, _ := ids(&csi.ListSnapshotsRequest{}); len(got) != 3 {
		t.Errorf("all snapshots: %v", got)
	}
	if got, _ := ids(&csi.ListSnapshotsRequest{SourceVolumeId: a.GetVolumeId()}); len(got) != 2 {
		t.Errorf("snapshots of volume a: %v", got)
	}
	if got, _ := ids(&csi.ListSnapshotsRequest{SnapshotId: s1.GetSnapshotId()}); len(got) != 1 || got[0] != s1.GetSnapshotId() {
		t.Errorf("snapshot 1: %v", got)
	}
	if got, _ := ids(&csi.ListSnapshotsRequest{SnapshotId: s1.GetSnapshotId(), SourceVolumeId: b.GetVolumeId()}); len(got) != 0 {
		t.Errorf("snapshot 1 of volume b: %v", got)
	}
	if got, _ := ids(&csi.ListSnapshotsRequest{SnapshotId: "unknown"}); len(got) != 0 {
		t.Errorf("unknown snapshot: %v", got)
	}

	page1, tok := ids(&csi.ListSnapshotsRequest{MaxEntries: 2})
	if len(page1) != 2 || tok == "" {
		t.Fatalf("first page: %v, token %q", page1, tok)
	}
	page2, tok2 := ids(&csi.ListSnapshotsRequest{MaxEntries: 2, StartingToken: tok})
	if len(page2) != 1 || tok2 != "" || page2[0] == page1[0] || page2[0] == page1[1] {
		t.Errorf("second page: %v, token %q after %v", page2, tok2, page1)
	}
	_, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: "bogus"})
	wantCode(t, err, codes.Aborted, "ListSnapshots with a bad token")
}

func TestIdentityAndNode(t *testing.T) {
	c := startTest(t)
	ctx := t.Context()
	info, err := c.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != csistate.DriverName || info.GetVendorVersion() == "" {
		t.Errorf("GetPluginInfo = %v, %v", info, err)
	}
	caps, err := c.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil || len(caps.GetCapabilities()) != 1 ||
		caps.GetCapabilities()[0].GetService().GetType() != csi.PluginCapability_Service_CONTROLLER_SERVICE {
		t.Errorf("GetPluginCapabilities = %v, %v", caps, err)
	}
	if probe, err := c.Probe(ctx, &csi.ProbeRequest{}); err != nil || !probe.GetReady().GetValue() {
		t.Errorf("Probe = %v, %v", probe, err)
	}
	ccaps, err := c.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	want := map[csi.ControllerServiceCapability_RPC_Type]bool{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME:   true,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT: true,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS:         true,
	}
	for _, cp := range ccaps.GetCapabilities() {
		delete(want, cp.GetRpc().GetType())
	}
	if err != nil || len(want) != 0 {
		t.Errorf("ControllerGetCapabilities = %v, %v; missing %v", ccaps, err, want)
	}
	if node, err := c.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err != nil || node.GetNodeId() != "node-1" {
		t.Errorf("NodeGetInfo = %v, %v", node, err)
	}
	_, err = c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "node-1"})
	wantCode(t, err, codes.Unimplemented, "ControllerPublishVolume")
	_, err = c.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v"})
	wantCode(t, err, codes.InvalidArgument, "NodePublishVolume of no volume at no target")
}

// TestNodePublishBindsTheVolume: publishing bind-mounts the volume's
// directory at the target (read-only when asked), publishing again is a
// no-op, and unpublishing unmounts and removes the target.
func TestNodePublishBindsTheVolume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	c := startTest(t)
	ctx := t.Context()
	vol := c.createVolume(t, "pvc-pub", nil)
	writeFile(t, filepath.Join(c.layout.VolumeDir(vol.GetVolumeId()), "hello.txt"), "hi", 0o644)
	for _, readOnly := range []bool{false, true} {
		target := filepath.Join(t.TempDir(), "mnt")
		req := &csi.NodePublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: target, Readonly: readOnly, VolumeCapability: mountCaps[0]}
		for range 2 {
			if _, err := c.NodePublishVolume(ctx, req); err != nil {
				t.Fatalf("NodePublishVolume (read-only %t): %v", readOnly, err)
			}
		}
		if data, err := os.ReadFile(filepath.Join(target, "hello.txt")); err != nil || string(data) != "hi" {
			t.Errorf("the volume's file at the target: %q, %v", data, err)
		}
		err := os.WriteFile(filepath.Join(target, "new.txt"), []byte("x"), 0o644)
		if readOnly != (err != nil) {
			t.Errorf("write to a target published read-only %t: %v", readOnly, err)
		}
		if _, err := c.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: target}); err != nil {
			t.Fatalf("NodeUnpublishVolume: %v", err)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("the target is left after unpublish: %v", err)
		}
	}
}

func TestStaleSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "s.sock")
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	lis.Close() // leaves the socket file, as a killed driver does

	logger := log.New(testWriter{t}, "", 0)
	d, err := startDriver(config{endpoint: "unix://" + socket, stateDir: filepath.Join(dir, "state")}, logger)
	if err != nil {
		t.Fatalf("start over a stale socket: %v", err)
	}
	d.stop()
	if _, err := os.Stat(socket); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket after stop: %v", err)
	}

	writeFile(t, socket, "not a socket", 0o644)
	if _, err := startDriver(config{endpoint: socket, stateDir: filepath.Join(dir, "state")}, logger); err == nil {
		t.Error("started over a regular file")
	}
}

func TestLogRedactsSecrets(t *testing.T) {
	got := summary(&csi.CreateVolumeRequest{Name: "pvc-a", Secrets: map[string]string{"password": "hunter2"}})
	if !strings.Contains(got, "pvc-a") || strings.Contains(got, "hunter2") {
		t.Errorf("summary = %q", got)
	}
}
