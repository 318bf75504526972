package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/internal/kube"
)

// TestEstimateCallsATypeEmptyOnlyWhenItsListFoundNothing: a failed
// list is an unknown estimate, not an empty type, so collection still
// lists it (and reports why it cannot).
func TestEstimateCallsATypeEmptyOnlyWhenItsListFoundNothing(t *testing.T) {
	res := func(name string) kube.Resource {
		return kube.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: name}}
	}
	lister := &objectLister{
		objects: map[string]map[string]string{
			"configmaps": {"a": named("a"), "b": named("b")},
			"services":   {"kubernetes": named("kubernetes")},
		},
		forbidden: map[string]bool{"pods": true},
	}
	got := estimateAll(context.Background(), lister, []kube.Resource{res("secrets"), res("configmaps"), res("services"), res("pods")})
	assert.Equal(t, []typeEstimate{{count: 0, empty: true}, {count: 2}, {count: 1}, {}}, got)
}
