package v1alpha1

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRestoreSpecValidateListsEveryProblem(t *testing.T) {
	spec := RestoreSpec{
		Name:                   "Bad_Name",
		ExistingResourcePolicy: "overwrite",
		ClusterResources:       "some",
		NamespaceMapping:       map[string]string{"a": "x", "b": "x", "c": "Not_Valid"},
		LabelSelector:          "app in (",
		ResourcePriorities:     []string{"config*"},
	}
	err := spec.Validate()
	var invalid *InvalidSpecError
	require.True(t, errors.As(err, &invalid))
	assert.Contains(t, err.Error(), "invalid restore spec")
	joined := invalid.Error()
	for _, want := range []string{"Bad_Name", "backupName is required", "existingResourcePolicy", "clusterResources",
		`maps both "a" and "b" to "x"`, "Not_Valid", "label selector", "resourcePriorities"} {
		assert.Contains(t, joined, want)
	}
	assert.NoError(t, RestoreSpec{Name: "r1", BackupName: "b1", NamespaceMapping: map[string]string{"shop": "shop-copy"}}.WithDefaults("").Validate())
}

func TestParseNamespaceMapping(t *testing.T) {
	m, err := ParseNamespaceMapping([]string{"shop:shop-copy", "db:db2"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"shop": "shop-copy", "db": "db2"}, m)
	for _, bad := range [][]string{{"shop"}, {":x"}, {"a:"}, {"a:b", "a:c"}} {
		_, err := ParseNamespaceMapping(bad)
		assert.Error(t, err, "%v", bad)
	}
}
