package restore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flowtest"
)

func restoreType(resource string, batches int) workflows.RestoreType {
	return workflows.RestoreType{ResourceType: workflows.ResourceType{Version: "v1", Resource: resource}, Batches: batches}
}

func groupNames(groups [][]workflows.RestoreType) [][]string {
	return flowtest.GroupNames(groups, func(t workflows.RestoreType) string { return t.Resource })
}

// TestApplyGroupsKeepOrderAndStandCRDsAndClaimsAlone: consecutive types
// share an activity; CRDs and claims, which the restore waits around,
// stand alone; nothing is reordered.
func TestApplyGroupsKeepOrderAndStandCRDsAndClaimsAlone(t *testing.T) {
	crds := workflows.RestoreType{ResourceType: workflows.ResourceType{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Batches: 1}
	types := []workflows.RestoreType{restoreType("namespaces", 1), crds, restoreType("serviceaccounts", 1), restoreType("configmaps", 2),
		restoreType("persistentvolumeclaims", 1), restoreType("pods", 1), restoreType("services", 1)}
	assert.Equal(t, [][]string{
		{"namespaces"}, {"customresourcedefinitions"}, {"serviceaccounts", "configmaps"}, {"persistentvolumeclaims"}, {"pods", "services"},
	}, groupNames(applyGroups(types)))
}

// TestApplyGroupsAreBounded: a group holds at most maxTypesPerApply types
// and maxBatchesPerApply batches, unless one type alone holds more.
func TestApplyGroupsAreBounded(t *testing.T) {
	var many []workflows.RestoreType
	for i := range maxTypesPerApply + 1 {
		many = append(many, restoreType(fmt.Sprint("t", i), 1))
	}
	groups := applyGroups(many)
	assert.Len(t, groups, 2)
	assert.Len(t, groups[0], maxTypesPerApply)

	big := []workflows.RestoreType{restoreType("a", 30), restoreType("b", 30), restoreType("huge", 500), restoreType("c", 1)}
	assert.Equal(t, [][]string{{"a"}, {"b"}, {"huge"}, {"c"}}, groupNames(applyGroups(big)))
	assert.Equal(t, [][]string{{"a", "b"}}, groupNames(applyGroups([]workflows.RestoreType{restoreType("a", 25), restoreType("b", 25)})))
}
