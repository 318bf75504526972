package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// SnapshotName is the deterministic name of the VolumeSnapshot a backup
// cuts of a claim: readable (claim and backup), unique (a hash of both
// with the namespace), at most 63 characters so it is also a valid label
// value (the snapshot's alias).
func SnapshotName(backup string, v Volume) string {
	sum := sha256.Sum256([]byte(backup + "\x00" + v.Namespace + "\x00" + v.Claim))
	hash := hex.EncodeToString(sum[:])[:10]
	base := v.Claim + "-" + backup
	if len(base) > 52 {
		base = base[:52]
	}
	return strings.TrimRight(base, "-.") + "-" + hash
}
