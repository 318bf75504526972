package main

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/cairn-backup/cairn/internal/csistate"
)

// defaultCapacity is a new volume's capacity when the request names none.
const defaultCapacity = 1 << 30

// controllerServer is the CSI controller service. Every call holds mu:
// simplicity over speed.
type controllerServer struct {
	csi.UnimplementedControllerServer

	mu    sync.Mutex
	store *store
	now   func() time.Time
}

func (c *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}},
		})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// CreateVolume makes an empty volume or a copy of a snapshot or volume. The
// volume ID is csistate.VolumeID of the request name, so a repeat finds the
// volume the first call made.
func (c *controllerServer) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	capacity, err := capacityFor(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	srcSnap := req.GetVolumeContentSource().GetSnapshot().GetSnapshotId()
	srcVol := req.GetVolumeContentSource().GetVolume().GetVolumeId()
	if req.GetVolumeContentSource() != nil && srcSnap == "" && srcVol == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_content_source names no snapshot or volume")
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	id := csistate.VolumeID(req.GetName())
	if v, ok, err := c.store.volume(id); err != nil {
		return nil, internal(err)
	} else if ok {
		limit := req.GetCapacityRange().GetLimitBytes()
		if v.SourceSnapshotID != srcSnap || v.SourceVolumeID != srcVol ||
			v.CapacityBytes < req.GetCapacityRange().GetRequiredBytes() || (limit > 0 && v.CapacityBytes > limit) {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists as %s with another source or capacity", req.GetName(), id)
		}
		return &csi.CreateVolumeResponse{Volume: volumeToCSI(v)}, nil
	}
	ctl, err := c.store.control()
	if err != nil {
		return nil, internal(err)
	}
	if ctl.CreateVolumeError != "" {
		return nil, status.Error(codes.Internal, ctl.CreateVolumeError)
	}
	from, err := c.sourceDir(srcSnap, srcVol, ctl)
	if err != nil {
		return nil, err
	}
	v := csistate.Volume{
		ID:               id,
		Name:             req.GetName(),
		CapacityBytes:    capacity,
		SourceSnapshotID: srcSnap,
		SourceVolumeID:   srcVol,
		CreatedAt:        c.now().UTC(),
	}
	if err := c.store.createVolume(v, from); err != nil {
		return nil, internal(err)
	}
	return &csi.CreateVolumeResponse{Volume: volumeToCSI(v)}, nil
}

// sourceDir is the data directory a new volume copies: the ready snapshot
// srcSnap's, the volume srcVol's, or "" for neither.
func (c *controllerServer) sourceDir(srcSnap, srcVol string, ctl csistate.Control) (string, error) {
	switch {
	case srcSnap != "":
		snap, ok, err := c.store.snapshot(srcSnap)
		if err != nil {
			return "", internal(err)
		}
		if !ok {
			return "", status.Errorf(codes.NotFound, "source snapshot %q not found", srcSnap)
		}
		if !snap.Ready(c.now(), ctl.SnapshotDelay.D()) {
			return "", status.Errorf(codes.Unavailable, "source snapshot %q is not ready yet", srcSnap)
		}
		return c.store.layout.SnapshotDir(srcSnap), nil
	case srcVol != "":
		_, ok, err := c.store.volume(srcVol)
		if err != nil {
			return "", internal(err)
		}
		if !ok {
			return "", status.Errorf(codes.NotFound, "source volume %q not found", srcVol)
		}
		return c.store.layout.VolumeDir(srcVol), nil
	}
	return "", nil
}

func (c *controllerServer) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.store.deleteVolume(req.GetVolumeId()); err != nil {
		return nil, internal(err)
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (c *controllerServer) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok, err := c.store.volume(req.GetVolumeId()); err != nil {
		return nil, internal(err)
	} else if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.GetVolumeId())
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

// CreateSnapshot cuts a snapshot at once, as a copy of the source volume's
// files. The snapshot ID is csistate.SnapshotID of the request name, so a
// repeat finds the snapshot the first call cut; the control file can delay
// its readiness or fail the first call.
func (c *controllerServer) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "source_volume_id is required")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ctl, err := c.store.control()
	if err != nil {
		return nil, internal(err)
	}
	id := csistate.SnapshotID(req.GetName())
	snap, ok, err := c.store.snapshot(id)
	if err != nil {
		return nil, internal(err)
	}
	if ok {
		if snap.SourceVolumeID != req.GetSourceVolumeId() {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %q exists as %s of volume %q", req.GetName(), id, snap.SourceVolumeID)
		}
		s, err := c.snapshotToCSI(snap, ctl)
		if err != nil {
			return nil, err
		}
		return &csi.CreateSnapshotResponse{Snapshot: s}, nil
	}
	if ctl.SnapshotError != "" {
		return nil, status.Error(codes.Internal, ctl.SnapshotError)
	}
	vol, ok, err := c.store.volume(req.GetSourceVolumeId())
	if err != nil {
		return nil, internal(err)
	}
	if !ok {
		return nil, status.Errorf(codes.NotFound, "source volume %q not found", req.GetSourceVolumeId())
	}
	snap = csistate.Snapshot{
		ID:             id,
		Name:           req.GetName(),
		SourceVolumeID: vol.ID,
		SizeBytes:      vol.CapacityBytes,
		CreatedAt:      c.now().UTC(),
	}
	if ctl.SnapshotDelay <= 0 {
		snap.ReadyAt = snap.CreatedAt
	}
	if err := c.store.cutSnapshot(snap); err != nil {
		return nil, internal(err)
	}
	s, err := c.snapshotToCSI(snap, ctl)
	if err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: s}, nil
}

func (c *controllerServer) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	if req.GetSnapshotId() == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.store.deleteSnapshot(req.GetSnapshotId()); err != nil {
		return nil, internal(err)
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots lists snapshots by ID, filtered by snapshot_id and
// source_volume_id; starting_token is the index of the first entry.
func (c *controllerServer) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Error(codes.InvalidArgument, "max_entries is negative")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ctl, err := c.store.control()
	if err != nil {
		return nil, internal(err)
	}
	all, err := c.store.snapshots()
	if err != nil {
		return nil, internal(err)
	}
	var matching []csistate.Snapshot
	for _, s := range all {
		if (req.GetSnapshotId() == "" || s.ID == req.GetSnapshotId()) &&
			(req.GetSourceVolumeId() == "" || s.SourceVolumeID == req.GetSourceVolumeId()) {
			matching = append(matching, s)
		}
	}
	start := 0
	if tok := req.GetStartingToken(); tok != "" {
		start, err = strconv.Atoi(tok)
		if err != nil || start < 0 || start > len(matching) {
			return nil, status.Errorf(codes.Aborted, "invalid starting_token %q", tok)
		}
	}
	end := len(matching)
	if n := int(req.GetMaxEntries()); n > 0 && start+n < end {
		end = start + n
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, s := range matching[start:end] {
		cs, err := c.snapshotToCSI(s, ctl)
		if err != nil {
			return nil, err
		}
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: cs})
	}
	if end < len(matching) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}

// snapshotToCSI reports snap, ready once SnapshotDelay has passed since it
// was cut. The first call that sees it ready records ReadyAt, so it stays
// ready if the delay grows later.
func (c *controllerServer) snapshotToCSI(snap csistate.Snapshot, ctl csistate.Control) (*csi.Snapshot, error) {
	ready := snap.Ready(c.now(), ctl.SnapshotDelay.D())
	if ready && snap.ReadyAt.IsZero() {
		snap.ReadyAt = snap.CreatedAt.Add(ctl.SnapshotDelay.D())
		if err := c.store.writeSnapshot(snap); err != nil {
			return nil, internal(err)
		}
	}
	return &csi.Snapshot{
		SizeBytes:      snap.SizeBytes,
		SnapshotId:     snap.ID,
		SourceVolumeId: snap.SourceVolumeID,
		CreationTime:   timestamppb.New(snap.CreatedAt),
		ReadyToUse:     ready,
	}, nil
}

func volumeToCSI(v csistate.Volume) *csi.Volume {
	out := &csi.Volume{VolumeId: v.ID, CapacityBytes: v.CapacityBytes}
	switch {
	case v.SourceSnapshotID != "":
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.SourceSnapshotID},
		}}
	case v.SourceVolumeID != "":
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.SourceVolumeID},
		}}
	}
	return out
}

// checkCapabilities accepts filesystem volumes of any access mode: a
// directory is no block device.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	for _, c := range caps {
		if c.GetBlock() != nil {
			return status.Error(codes.InvalidArgument, "block volumes are not supported")
		}
	}
	return nil
}

// capacityFor is the required bytes, else defaultCapacity capped by the
// limit.
func capacityFor(r *csi.CapacityRange) (int64, error) {
	required, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if required < 0 || limit < 0 || (limit > 0 && required > limit) {
		return 0, status.Errorf(codes.OutOfRange, "invalid capacity range %d..%d", required, limit)
	}
	if required > 0 {
		return required, nil
	}
	if limit > 0 && limit < defaultCapacity {
		return limit, nil
	}
	return defaultCapacity, nil
}

func internal(err error) error {
	return status.Error(codes.Internal, err.Error())
}
