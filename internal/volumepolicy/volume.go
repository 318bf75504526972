package volumepolicy

import "k8s.io/apimachinery/pkg/api/resource"

// Volume is what the conditions look at: a claim and its bound volume.
type Volume struct {
	// Capacity is nil when unknown; conditions then see it as zero, as
	// Velero does, so only a capacity range open at the bottom holds for it.
	Capacity           *resource.Quantity
	StorageClass       string
	CSIDriver          string // "" for a volume that is not CSI
	VolumeAttributes   map[string]string
	NFSServer, NFSPath string // "" for a volume that is not NFS
	ClaimLabels        map[string]string
	ClaimPhase         string // Bound, Pending, Lost
}

func (v Volume) isCSI() bool { return v.CSIDriver != "" }

func (v Volume) isNFS() bool { return v.NFSServer != "" || v.NFSPath != "" }
