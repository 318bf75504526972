package volumepolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte("version: v1\nvolumePolicies:\n- conditions: {capacity: \"1Gi,\", csi: {driver: d, volumeAttributes: {a: b}}}\n  action: {type: skip}\n"))
	f.Add([]byte(`{"version": "v1", "volumePolicies": [{"conditions": {"nfs": {}, "pvcPhase": ["Bound"]}, "action": {"type": "fs-backup"}}]}`))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("version: v1\nvolumePolicies:\n- conditions: {capacity: \"1e99999999999,\"}\n  action: {type: skip}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			assert.ErrorIs(t, err, ErrInvalid)
			return
		}
		p.Match(Volume{})
		p.Match(Volume{Capacity: size("1Gi"), CSIDriver: "d", NFSServer: "s", NFSPath: "/p", ClaimPhase: "Bound"})
	})
}
