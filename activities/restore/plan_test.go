package restore

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func TestMappingCollisions(t *testing.T) {
	idx := &backupIndex{namespaces: map[string]bool{"shop": true, "db": true}}
	spec := func(m map[string]string) v1alpha1.RestoreSpec { return v1alpha1.RestoreSpec{NamespaceMapping: m} }
	assert.NoError(t, mappingCollisions(spec(map[string]string{"shop": "shop-copy"}), idx))
	assert.NoError(t, mappingCollisions(spec(map[string]string{"shop": "db", "db": "db-old"}), idx), "db moves away first")
	err := mappingCollisions(spec(map[string]string{"shop": "db"}), idx)
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), `restores namespace "db" under its own name`)
	}
}
