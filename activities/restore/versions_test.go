package restore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/internal/kube"
)

func TestChooseVersion(t *testing.T) {
	target := &targetAPI{
		preferred: map[string]kube.Resource{
			"horizontalpodautoscalers.autoscaling": {GVR: schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}},
			"widgets.example.com":                  {GVR: schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}},
		},
		versions: map[string][]string{"autoscaling": {"v2", "v1"}, "example.com": {"v2", "v1"}},
	}
	cases := []struct {
		name      string
		gr        string
		index     typeIndex
		want      string
		wantFound bool
	}{
		{"target's preferred version is in the backup", "horizontalpodautoscalers.autoscaling",
			typeIndex{preferred: "v2beta2", versions: map[string]bool{"v2beta2": true, "v2": true, "v1": true}}, "v2", true},
		{"else the source's preferred version if served", "widgets.example.com",
			typeIndex{preferred: "v1", versions: map[string]bool{"v1": true}}, "v1", true},
		{"version-less copies only (old format)", "widgets.example.com",
			typeIndex{plainVersion: "v1", versions: map[string]bool{"v1": true}}, "v1", true},
		{"no version in common", "horizontalpodautoscalers.autoscaling",
			typeIndex{preferred: "v2beta1", versions: map[string]bool{"v2beta1": true}}, "", false},
		{"group not served at all", "gadgets.other.io",
			typeIndex{preferred: "v1", versions: map[string]bool{"v1": true}}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := target.chooseVersion(c.gr, &c.index)
			assert.Equal(t, c.wantFound, ok)
			assert.Equal(t, c.want, got)
		})
	}
	assert.Contains(t, target.notServedReason("horizontalpodautoscalers.autoscaling",
		&typeIndex{versions: map[string]bool{"v2beta1": true}}), "serves autoscaling only at v2, v1")
	assert.Contains(t, target.notServedReason("gadgets.other.io", &typeIndex{versions: map[string]bool{"v1": true}}), "does not serve")
}
