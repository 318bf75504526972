package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairn-backup/cairn/internal/csistate"
)

// nodeServer is the CSI node service: a pod's volume is its directory,
// bind-mounted where the kubelet asks (read-only when asked).
type nodeServer struct {
	csi.UnimplementedNodeServer
	nodeID   string
	stateDir string
}

func (n nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: n.nodeID}, nil
}

func (nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodePublishVolume bind-mounts the volume's directory at the target
// path; publishing again what is already there succeeds.
func (n nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if !csistate.IsVolumeID(id) || target == "" {
		return nil, status.Errorf(codes.InvalidArgument, "volume %q at %q: a volume ID and a target path are required", id, target)
	}
	src := csistate.VolumeDirForHandle(n.stateDir, id)
	if _, err := os.Stat(src); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", id, err)
	}
	if mounted, err := isMountPoint(target); err != nil {
		return nil, status.Errorf(codes.Internal, "target %s: %v", target, err)
	} else if mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "target %s: %v", target, err)
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind %s at %s: %v", src, target, err)
	}
	if req.GetReadonly() {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, unix.MNT_DETACH)
			return nil, status.Errorf(codes.Internal, "make %s read-only: %v", target, err)
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target and removes it; a target that
// is gone already is done.
func (nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if target == "" {
		return nil, status.Error(codes.InvalidArgument, "a target path is required")
	}
	if mounted, err := isMountPoint(target); err == nil && mounted {
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove %s: %v", target, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// isMountPoint reports whether path is a mount point in the mount table
// (mount points with spaces are escaped there; the kubelet's never have
// one).
func isMountPoint(path string) (bool, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true, nil
		}
	}
	return false, nil
}
