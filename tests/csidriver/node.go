package main

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// nodeServer is the CSI node service: there is no kubelet in the sandbox to
// mount volumes, so it only says who it is.
type nodeServer struct {
	csi.UnimplementedNodeServer
	nodeID string
}

func (n nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: n.nodeID}, nil
}

func (nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}
