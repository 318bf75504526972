package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWholeClusterAndRelatedByReference(t *testing.T) {
	cases := []struct {
		spec               BackupSpec
		whole, byReference bool
	}{
		{BackupSpec{IncludedNamespaces: []string{"*"}}, true, false},
		{BackupSpec{}, true, false},
		{BackupSpec{IncludedNamespaces: []string{"shop"}}, false, true},
		{BackupSpec{IncludedNamespaces: []string{"*"}, LabelSelector: "app=web"}, false, true},
		{BackupSpec{IncludedNamespaces: []string{"*"}, ExcludedNamespaces: []string{"kube-system"}}, false, true},
		{BackupSpec{IncludedNamespaces: []string{"shop"}, ClusterResources: ClusterResourcesInclude}, true, false},
		{BackupSpec{IncludedNamespaces: []string{"*"}, ClusterResources: ClusterResourcesExclude}, false, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.whole, c.spec.WholeCluster(), "%+v", c.spec)
		assert.Equal(t, c.byReference, c.spec.TakesRelatedByReference(), "%+v", c.spec)
	}
}
