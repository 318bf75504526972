package restore

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUIDTypesFindsEveryUIDItWasGiven(t *testing.T) {
	u := newUIDTypes()
	const api = "0b6e4d5e-3c1a-4f7e-9a53-2f0c3b1d8e11"
	const upper = "0B6E4D5E-3C1A-4F7E-9A53-2F0C3B1D8E12"
	assert.True(t, u.add(api, "configmaps"))
	assert.True(t, u.add(upper, "deployments.apps"), "a UID in another spelling is kept as it is")
	assert.True(t, u.add("velero-made-uid", "configmaps"))
	assert.False(t, u.add(api, "secrets"), "a UID seen before keeps its first type")

	for uid, want := range map[string]string{api: "configmaps", upper: "deployments.apps", "velero-made-uid": "configmaps"} {
		got, ok := u.get(uid)
		assert.True(t, ok, uid)
		assert.Equal(t, want, got, uid)
	}
	_, ok := u.get("0b6e4d5e-3c1a-4f7e-9a53-2f0c3b1d8e13")
	assert.False(t, ok, "an unknown UID is not found")
	_, ok = u.get("0B6E4D5E-3C1A-4F7E-9A53-2F0C3B1D8E11")
	assert.False(t, ok, "UIDs compare as the strings they are")
	assert.Equal(t, []string{"configmaps", "deployments.apps"}, u.types, "each type is named once")
}
