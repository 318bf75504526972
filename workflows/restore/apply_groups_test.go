package restore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

func restoreType(resource string, batches int) v1alpha1.RestoreType {
	return v1alpha1.RestoreType{ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: resource}, Batches: batches}
}

func groupNames(groups [][]v1alpha1.RestoreType) [][]string {
	return flowtest.GroupNames(groups, func(t v1alpha1.RestoreType) string { return t.Resource })
}

// TestApplyGroupsKeepOrderAndStandCRDsAndClaimsAlone: consecutive types
// share an activity; CRDs and claims, which the restore waits around,
// stand alone; nothing is reordered.
func TestApplyGroupsKeepOrderAndStandCRDsAndClaimsAlone(t *testing.T) {
	crds := v1alpha1.RestoreType{ResourceType: v1alpha1.ResourceType{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Batches: 1}
	types := []v1alpha1.RestoreType{restoreType("namespaces", 1), crds, restoreType("serviceaccounts", 1), restoreType("configmaps", 2),
		restoreType("persistentvolumeclaims", 1), restoreType("pods", 1), restoreType("services", 1)}
	assert.Equal(t, [][]string{
		{"namespaces"}, {"customresourcedefinitions"}, {"serviceaccounts", "configmaps"}, {"persistentvolumeclaims"}, {"pods", "services"},
	}, groupNames(applyGroups(types)))
}

// TestApplyGroupsAreBounded: a group holds at most maxTypesPerApply types
// and maxBatchesPerApply batches, unless one type alone holds more.
func TestApplyGroupsAreBounded(t *testing.T) {
	var many []v1alpha1.RestoreType
	for i := range maxTypesPerApply + 1 {
		many = append(many, restoreType(fmt.Sprint("t", i), 1))
	}
	groups := applyGroups(many)
	assert.Len(t, groups, 2)
	assert.Len(t, groups[0], maxTypesPerApply)

	big := []v1alpha1.RestoreType{restoreType("a", 30), restoreType("b", 30), restoreType("huge", 500), restoreType("c", 1)}
	assert.Equal(t, [][]string{{"a"}, {"b"}, {"huge"}, {"c"}}, groupNames(applyGroups(big)))
	assert.Equal(t, [][]string{{"a", "b"}}, groupNames(applyGroups([]v1alpha1.RestoreType{restoreType("a", 25), restoreType("b", 25)})))
}
