package kube

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// configMapPage is a LIST response of n ConfigMaps of about 1 KiB each, as
// the API server sends it.
func configMapPage(n int) []byte {
	items := make([]string, n)
	payload := strings.Repeat("x", 1024)
	for i := range items {
		items[i] = fmt.Sprintf(`{"metadata":{"name":"cm-%06d","namespace":"bench-%03d","uid":"5f1c3a2e-0000-4000-8000-%012d","resourceVersion":"%d","creationTimestamp":"2026-11-22T10:00:00Z","labels":{"app":"seed"},"managedFields":[{"manager":"bench","operation":"Update","apiVersion":"v1","time":"2026-11-22T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:payload":{}}}}]},"data":{"payload":"%s"}}`, i, i%100, i, 1000+i, payload)
	}
	return []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"99","continue":"abc"},"items":[` + strings.Join(items, ",") + `]}`)
}

func BenchmarkDecodePage(b *testing.B) {
	body := configMapPage(500)
	r := Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := decodePage(body, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReferenceDecode is what any client pays: one json.Unmarshal of
// the page into generic items.
func BenchmarkReferenceDecode(b *testing.B) {
	body := configMapPage(500)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			b.Fatal(err)
		}
	}
}
