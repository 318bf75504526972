package deploy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCRDsNameCairnsResources(t *testing.T) {
	crds, err := CRDs()
	require.NoError(t, err)
	var names []string
	for _, crd := range crds {
		names = append(names, crd.Name)
		assert.Equal(t, "cairn.io", crd.Spec.Group)
		assert.NotEmpty(t, crd.Spec.Versions[0].Subresources, "status is a subresource: a spec write cannot forge it")
	}
	assert.ElementsMatch(t, []string{"backups.cairn.io", "restores.cairn.io", "schedules.cairn.io"}, names)
}
