package kube

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var deployments = Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}

func TestDecodePageKeepsEachItemWhole(t *testing.T) {
	body := []byte(`{"kind":"DeploymentList","apiVersion":"apps/v1",
	  "metadata":{"continue":"tok","remainingItemCount":7},
	  "items":[
	    {"metadata":{"name":"web","namespace":"shop","labels":{"app":"web","tier":"front"}},"spec":{"replicas":2,"note":"a \"quoted\" }{ brace","template":{"apiVersion":"v1","kind":"Pod"}}},
	    {"metadata":{"name":"db","namespace":"shop"},"spec":{}}
	  ]}`)
	page, err := decodePage(body, deployments)
	require.NoError(t, err)
	assert.Equal(t, "tok", page.Continue)
	assert.Equal(t, int64(7), page.Remaining)
	require.Len(t, page.Items, 2)

	web := page.Items[0]
	assert.Equal(t, "web", web.Name)
	assert.Equal(t, "shop", web.Namespace)
	assert.Equal(t, map[string]string{"app": "web", "tier": "front"}, web.Labels)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(web.Raw, &obj), string(web.Raw))
	assert.Equal(t, "apps/v1", obj["apiVersion"], "list items get their type stamped")
	assert.Equal(t, "Deployment", obj["kind"], "a nested kind is not the object's")
	assert.Equal(t, 1, strings.Count(string(web.Raw), `"kind":"Deployment"`))
	assert.Equal(t, `a "quoted" }{ brace`, obj["spec"].(map[string]any)["note"])
	assert.NotContains(t, string(web.Raw), "\n", "stored as one line")
	assert.Nil(t, page.Items[1].Labels)
	assert.Equal(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"db","namespace":"shop"},"spec":{}}`,
		string(page.Items[1].Raw), "each item's line is its own, whole")
	assert.True(t, json.Valid(web.Raw), "an item's line is not overwritten by the next one's")
}

// TestDecodePageKeepsTheTypeItemsCarry: a custom resource's list items
// carry their apiVersion and kind, and are kept as the server sent them.
func TestDecodePageKeepsTheTypeItemsCarry(t *testing.T) {
	body := []byte(`{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{},"items":[` +
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"}},` +
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b"}}]}`)
	page, err := decodePage(body, Resource{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget"})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	assert.Equal(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"}}`, string(page.Items[0].Raw))
	assert.Equal(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b"}}`, string(page.Items[1].Raw))
}

func TestDecodeItemKeepsExistingType(t *testing.T) {
	it, err := DecodeItem([]byte("{\n  \"apiVersion\": \"apps/v1\",\n  \"kind\": \"Deployment\",\n  \"metadata\": {\"name\": \"web\"}\n}"), deployments)
	require.NoError(t, err)
	assert.Equal(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`, string(it.Raw))
}

func TestDecodePageRejectsTruncatedBody(t *testing.T) {
	_, err := decodePage([]byte(`{"items":[{"metadata":{"name":"a"}},{"meta`), deployments)
	assert.ErrorContains(t, err, "invalid JSON")
}
