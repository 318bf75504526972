package volumepolicy

import "k8s.io/apimachinery/pkg/api/resource"

// Volume is what the conditions look at: a claim and its bound volume,
// or a volume of a pod's spec.
type Volume struct {
	// Type is the volume's kind as volumeTypes names it (csi, nfs, local,
	// hostPath, emptyDir, ephemeral); "" when unknown.
	Type string
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

func (v Volume) isCSI() bool { return v.CSIDriver != "" || v.Type == "csi" }

func (v Volume) isNFS() bool { return v.NFSServer != "" || v.NFSPath != "" || v.Type == "nfs" }

// isType holds for volumes of a type only Type records.
func isType(t string) func(Volume) bool { return func(v Volume) bool { return v.Type == t } }
