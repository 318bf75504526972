package volumepolicy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
)

func mustParse(t *testing.T, doc string) *Policies {
	t.Helper()
	p, err := Parse([]byte(doc))
	require.NoError(t, err)
	return p
}

func size(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// decision is what Match said, in one comparable value.
func decision(p *Policies, v Volume) string {
	a, ok := p.Match(v)
	if !ok {
		return "no match"
	}
	return fmt.Sprintf("%s by %s", a.Type, a.Policy)
}

func TestSkipByStorageClass(t *testing.T) {
	p := mustParse(t, `
version: v1
volumePolicies:
- conditions:
    storageClass: [gp2, ebs-sc]
  action:
    type: skip
`)
	assert.Equal(t, "skip by volumePolicies[0]", decision(p, Volume{StorageClass: "gp2"}))
	assert.Equal(t, "skip by volumePolicies[0]", decision(p, Volume{StorageClass: "ebs-sc"}))
	assert.Equal(t, "no match", decision(p, Volume{StorageClass: "standard"}))
	assert.Equal(t, "no match", decision(p, Volume{}), "a volume without a class")
}

func TestSkipByClaimLabel(t *testing.T) {
	p := mustParse(t, `
version: v1
volumePolicies:
- conditions:
    pvcLabels:
      environment: scratch
  action:
    type: skip
`)
	assert.Equal(t, "skip by volumePolicies[0]",
		decision(p, Volume{ClaimLabels: map[string]string{"environment": "scratch", "team": "web"}}),
		"extra labels on the claim do not matter")
	assert.Equal(t, "no match", decision(p, Volume{ClaimLabels: map[string]string{"environment": "production"}}))
	assert.Equal(t, "no match", decision(p, Volume{}))
}

func TestEveryClaimLabelMustHold(t *testing.T) {
	p := mustParse(t, `
version: v1
volumePolicies:
- conditions:
    pvcLabels: {environment: production, app: frontend}
  action:
    type: skip
`)
	assert.Equal(t, "no match", decision(p, Volume{ClaimLabels: map[string]string{"environment": "production"}}))
	assert.Equal(t, "skip by volumePolicies[0]",
		decision(p, Volume{ClaimLabels: map[string]string{"environment": "production", "app": "frontend"}}))
}

func TestSnapshotOnlyOneCSIDriver(t *testing.T) {
	// A policy without conditions holds for every volume; Velero writes it
	// without the key, as "conditions: {}" or as a null conditions key.
	for name, catchAll := range map[string]string{
		"absent": "- action: {type: skip}",
		"empty":  "- conditions: {}\n  action: {type: skip}",
		"null":   "- conditions:\n  action: {type: skip}",
	} {
		t.Run(name, func(t *testing.T) {
			p := mustParse(t, `
version: v1
volumePolicies:
- conditions:
    csi:
      driver: ebs.csi.aws.com
  action:
    type: snapshot
`+catchAll+"\n")
			require.Equal(t, 2, p.Len())
			assert.Equal(t, "snapshot by volumePolicies[0]", decision(p, Volume{CSIDriver: "ebs.csi.aws.com", Capacity: size("5Gi")}))
			assert.Equal(t, "skip by volumePolicies[1]", decision(p, Volume{CSIDriver: "efs.csi.aws.com"}))
			assert.Equal(t, "skip by volumePolicies[1]", decision(p, Volume{NFSServer: "10.0.0.1", NFSPath: "/export"}))
			assert.Equal(t, "skip by volumePolicies[1]", decision(p, Volume{}), "a volume nothing is known of")
		})
	}
}

func TestAnyCSIVolume(t *testing.T) {
	p := mustParse(t, "version: v1\nvolumePolicies:\n- conditions: {csi: {}}\n  action: {type: snapshot}\n")
	assert.Equal(t, "snapshot by volumePolicies[0]", decision(p, Volume{CSIDriver: "pd.csi.storage.gke.io"}))
	assert.Equal(t, "no match", decision(p, Volume{NFSServer: "nas", NFSPath: "/x"}))
}

func TestFSBackupByNFSServerAndPath(t *testing.T) {
	p := mustParse(t, `
version: v1
volumePolicies:
- conditions:
    nfs: {server: 10.0.0.1, path: /export}
  action:
    type: fs-backup
- conditions:
    nfs: {path: /scratch}
  action:
    type: skip
- conditions:
    nfs: {}
  action:
    type: snapshot
`)
	a, ok := p.Match(Volume{NFSServer: "10.0.0.1", NFSPath: "/export"})
	require.True(t, ok)
	assert.Equal(t, Action{Type: FSBackup, Policy: "volumePolicies[0]"}, a)

	assert.Equal(t, "skip by volumePolicies[1]", decision(p, Volume{NFSServer: "10.0.0.2", NFSPath: "/scratch"}),
		"only the path is given, any server")
	assert.Equal(t, "snapshot by volumePolicies[2]", decision(p, Volume{NFSServer: "10.0.0.1", NFSPath: "/other"}),
		"nfs: {} holds for any NFS volume")
	assert.Equal(t, "no match", decision(p, Volume{CSIDriver: "nfs.csi.k8s.io"}))
}

func TestCapacityRanges(t *testing.T) {
	tests := []struct {
		capacity string
		size     *resource.Quantity
		want     bool
	}{
		{"10Gi,100Gi", size("50Gi"), true},
		{"10Gi,100Gi", size("10Gi"), true},
		{"10Gi,100Gi", size("100Gi"), true},
		{"10Gi,100Gi", size("9Gi"), false},
		{"10Gi,100Gi", size("101Gi"), false},
		{"0,10Gi", size("0"), true},
		{"0,10Gi", size("10Gi"), true},
		{"0,10Gi", size("11Gi"), false},
		{",10Gi", size("1Mi"), true},
		{",10Gi", size("11Gi"), false},
		{"100Gi,", size("5Ti"), true},
		{"100Gi,", size("99Gi"), false},
		{",", size("5Ti"), true},
		{" 1Gi , 2Gi ", size("1536Mi"), true},
		{"10,100Gi", size("10"), true},
		{"10,100Gi", size("9"), false},
		// Velero reads an unknown capacity as zero: only a range open at
		// the bottom holds for it.
		{"0,10Gi", nil, true},
		{",10Gi", nil, true},
		{",", nil, true},
		{"10Gi,100Gi", nil, false},
		{"100Gi,", nil, false},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%q holds for %v", tt.capacity, tt.size)
		t.Run(name, func(t *testing.T) {
			p := mustParse(t, fmt.Sprintf("version: v1\nvolumePolicies:\n- conditions: {capacity: %q}\n  action: {type: skip}\n", tt.capacity))
			_, ok := p.Match(Volume{Capacity: tt.size})
			assert.Equal(t, tt.want, ok)
		})
	}
}

func TestHugeCapacities(t *testing.T) {
	// Quantity.Cmp on such a capacity would expand its exponent for
	// minutes; the test's timeout catches a matcher that calls it.
	huge, hugeNegative := size("1e99999999999"), size("-1e99999999999")
	for _, tt := range []struct {
		capacity string
		size     *resource.Quantity
		want     bool
	}{
		{"100Gi,", huge, true},
		{"0,10Gi", huge, false},
		{"0,10Gi", hugeNegative, true},
		{"1Gi,", hugeNegative, false},
	} {
		p := mustParse(t, fmt.Sprintf("version: v1\nvolumePolicies:\n- conditions: {capacity: %q}\n  action: {type: skip}\n", tt.capacity))
		_, ok := p.Match(Volume{Capacity: tt.size})
		assert.Equal(t, tt.want, ok, "%q holds for %v", tt.capacity, tt.size)
	}
}

func TestVolumeAttributesMustAllHold(t *testing.T) {
	p := mustParse(t, `
version: v1
volumePolicies:
- conditions:
    csi:
      driver: ebs.csi.aws.com
      volumeAttributes: {type: gp3, encrypted: "true"}
  action:
    type: snapshot
`)
	both := map[string]string{"type": "gp3", "encrypted": "true", "iops": "3000"}
	assert.Equal(t, "snapshot by volumePolicies[0]", decision(p, Volume{CSIDriver: "ebs.csi.aws.com", VolumeAttributes: both}))
	assert.Equal(t, "no match", decision(p, Volume{CSIDriver: "ebs.csi.aws.com", VolumeAttributes: map[string]string{"type": "gp3"}}))
	assert.Equal(t, "no match", decision(p, Volume{CSIDriver: "ebs.csi.aws.com", VolumeAttributes: map[string]string{"type": "gp2", "encrypted": "true"}}))
	assert.Equal(t, "no match", decision(p, Volume{CSIDriver: "ebs.csi.aws.com"}))
	assert.Equal(t, "no match", decision(p, Volume{CSIDriver: "other.csi", VolumeAttributes: both}))
}

func TestEmptyWantedAttributeMustBePresent(t *testing.T) {
	p := mustParse(t, "version: v1\nvolumePolicies:\n- conditions: {csi: {driver: d, volumeAttributes: {pool: \"\"}}}\n  action: {type: skip}\n")
	assert.Equal(t, "no match", decision(p, Volume{CSIDriver: "d", VolumeAttributes: map[string]string{"other": "x"}}))
	assert.Equal(t, "skip by volumePolicies[0]", decision(p, Volume{CSIDriver: "d", VolumeAttributes: map[string]string{"pool": ""}}))
}

func TestClaimPhase(t *testing.T) {
	p := mustParse(t, `
version: v1
volumePolicies:
- conditions:
    pvcPhase: [Pending, Lost]
  action:
    type: skip
`)
	assert.Equal(t, "skip by volumePolicies[0]", decision(p, Volume{ClaimPhase: "Pending"}))
	assert.Equal(t, "skip by volumePolicies[0]", decision(p, Volume{ClaimPhase: "Lost"}))
	assert.Equal(t, "no match", decision(p, Volume{ClaimPhase: "Bound"}))
	assert.Equal(t, "no match", decision(p, Volume{}))
}

func TestVolumeTypes(t *testing.T) {
	p := mustParse(t, "version: v1\nvolumePolicies:\n- conditions: {volumeTypes: [nfs]}\n  action: {type: fs-backup}\n- conditions: {volumeTypes: [csi]}\n  action: {type: snapshot}\n")
	assert.Equal(t, "fs-backup by volumePolicies[0]", decision(p, Volume{NFSServer: "nas", NFSPath: "/x"}))
	assert.Equal(t, "snapshot by volumePolicies[1]", decision(p, Volume{CSIDriver: "d"}))
	assert.Equal(t, "no match", decision(p, Volume{StorageClass: "local"}))
}

func TestAllConditionsOfAPolicyMustHold(t *testing.T) {
	p := mustParse(t, `
version: v1
volumePolicies:
- conditions:
    storageClass: [gp2]
    capacity: "0,10Gi"
    pvcPhase: [Bound]
  action:
    type: skip
`)
	assert.Equal(t, "skip by volumePolicies[0]", decision(p, Volume{StorageClass: "gp2", Capacity: size("1Gi"), ClaimPhase: "Bound"}))
	assert.Equal(t, "no match", decision(p, Volume{StorageClass: "gp2", Capacity: size("20Gi"), ClaimPhase: "Bound"}))
	assert.Equal(t, "no match", decision(p, Volume{StorageClass: "gp3", Capacity: size("1Gi"), ClaimPhase: "Bound"}))
	assert.Equal(t, "no match", decision(p, Volume{StorageClass: "gp2", Capacity: size("1Gi"), ClaimPhase: "Pending"}))
}

func TestFirstMatchingPolicyWins(t *testing.T) {
	const gp2FSBackup = "- conditions: {storageClass: [gp2]}\n  action: {type: fs-backup}\n"
	const smallSkip = "- conditions: {capacity: \"0,10Gi\"}\n  action: {type: skip}\n"
	small := Volume{StorageClass: "gp2", Capacity: size("1Gi")}

	p := mustParse(t, "version: v1\nvolumePolicies:\n"+gp2FSBackup+smallSkip)
	assert.Equal(t, "fs-backup by volumePolicies[0]", decision(p, small))

	p = mustParse(t, "version: v1\nvolumePolicies:\n"+smallSkip+gp2FSBackup)
	assert.Equal(t, "skip by volumePolicies[0]", decision(p, small))
	assert.Equal(t, "fs-backup by volumePolicies[1]", decision(p, Volume{StorageClass: "gp2", Capacity: size("1Ti")}))
}

func TestNoPoliciesMatchNothing(t *testing.T) {
	p := mustParse(t, "version: v1\n")
	assert.Equal(t, 0, p.Len())
	assert.Equal(t, "no match", decision(p, Volume{}))

	var none *Policies
	assert.Equal(t, 0, none.Len())
	assert.Equal(t, "no match", decision(none, Volume{}))
}
