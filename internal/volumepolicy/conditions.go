package volumepolicy

import (
	"errors"
	"fmt"
	"slices"
)

// condition reports whether one condition of a policy holds for a volume.
type condition func(Volume) bool

// claimPhases are the phases a PersistentVolumeClaim can be in. Velero
// compares pvcPhase case-sensitively without checking it, so a misspelt
// phase would silently never hold; cairn refuses it.
var claimPhases = []string{"Pending", "Bound", "Lost"}

// volumeTypes are the volume types a Volume can tell apart. Velero's list
// also names in-tree types (rbd, cephfs, ...) that a Volume does not
// record, so a policy on them could never hold; cairn refuses them.
var volumeTypes = map[string]func(Volume) bool{
	"csi":       Volume.isCSI,
	"nfs":       Volume.isNFS,
	"local":     isType("local"),
	"hostPath":  isType("hostPath"),
	"emptyDir":  isType("emptyDir"),
	"ephemeral": isType("ephemeral"),
}

// compileConditions turns a policy's conditions into checks. Absent, null
// and empty conditions make no check, so such a policy holds for every
// volume, as in Velero.
func compileConditions(doc *conditionsDoc) ([]condition, error) {
	if doc == nil {
		return nil, nil
	}
	var conditions []condition
	if doc.Capacity != "" {
		r, err := parseCapacityRange(doc.Capacity)
		if err != nil {
			return nil, fmt.Errorf("conditions.capacity: %w", err)
		}
		conditions = append(conditions, func(v Volume) bool { return r.contains(v.Capacity) })
	}
	if len(doc.StorageClass) > 0 {
		// Velero never matches "", not even a volume without a class.
		if i := slices.Index(doc.StorageClass, ""); i >= 0 {
			return nil, fmt.Errorf("conditions.storageClass[%d]: empty", i)
		}
		conditions = append(conditions, func(v Volume) bool { return slices.Contains(doc.StorageClass, v.StorageClass) })
	}
	if doc.CSI != nil {
		c, err := csiCondition(*doc.CSI)
		if err != nil {
			return nil, fmt.Errorf("conditions.csi: %w", err)
		}
		conditions = append(conditions, c)
	}
	if doc.NFS != nil {
		conditions = append(conditions, nfsCondition(*doc.NFS))
	}
	if len(doc.VolumeTypes) > 0 {
		isUnsupported := func(t string) bool { return volumeTypes[t] == nil }
		if i := slices.IndexFunc(doc.VolumeTypes, isUnsupported); i >= 0 {
			return nil, fmt.Errorf("conditions.volumeTypes[%d]: %q is not supported (only csi, nfs, local, hostPath, emptyDir and ephemeral are)", i, doc.VolumeTypes[i])
		}
		conditions = append(conditions, func(v Volume) bool {
			return slices.ContainsFunc(doc.VolumeTypes, func(t string) bool { return volumeTypes[t](v) })
		})
	}
	if len(doc.PVCLabels) > 0 {
		conditions = append(conditions, func(v Volume) bool { return hasAll(v.ClaimLabels, doc.PVCLabels) })
	}
	if len(doc.PVCPhase) > 0 {
		isUnknown := func(phase string) bool { return !slices.Contains(claimPhases, phase) }
		if i := slices.IndexFunc(doc.PVCPhase, isUnknown); i >= 0 {
			return nil, fmt.Errorf("conditions.pvcPhase[%d]: unknown phase %q (want one of %v)", i, doc.PVCPhase[i], claimPhases)
		}
		conditions = append(conditions, func(v Volume) bool { return slices.Contains(doc.PVCPhase, v.ClaimPhase) })
	}
	return conditions, nil
}

// csiCondition holds for CSI volumes; "csi: {}" for any of them.
func csiCondition(doc csiDoc) (condition, error) {
	if doc.Driver == "" && doc.VolumeAttributes != nil {
		return nil, errors.New("volumeAttributes needs a driver")
	}
	return func(v Volume) bool {
		return v.isCSI() &&
			(doc.Driver == "" || doc.Driver == v.CSIDriver) &&
			hasAll(v.VolumeAttributes, doc.VolumeAttributes)
	}, nil
}

// nfsCondition holds for NFS volumes; "nfs: {}" for any of them.
func nfsCondition(doc nfsDoc) condition {
	return func(v Volume) bool {
		return v.isNFS() &&
			(doc.Server == "" || doc.Server == v.NFSServer) &&
			(doc.Path == "" || doc.Path == v.NFSPath)
	}
}

// hasAll reports whether have holds every key of want with the same value.
// Unlike Velero, a wanted key must be present even when its value is "".
func hasAll(have, want map[string]string) bool {
	for k, w := range want {
		if h, ok := have[k]; !ok || h != w {
			return false
		}
	}
	return true
}
