package extension

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnchanged(t *testing.T) {
	for _, item := range []string{"", " ", "null", " null\n"} {
		assert.True(t, Unchanged(json.RawMessage(item)), "%q", item)
	}
	assert.False(t, Unchanged(json.RawMessage(`{}`)))
}

// TestCheckObjectRefsRefusesWhatIsNotAName: "." and ".." would become
// another path on the API server, so they are refused like a missing
// name.
func TestCheckObjectRefsRefusesWhatIsNotAName(t *testing.T) {
	for _, r := range []ObjectRef{
		{Resource: "secrets", Namespace: "shop", Name: ".."},
		{Resource: "secrets", Namespace: "shop", Name: "."},
		{Resource: "secrets", Namespace: "..", Name: "db"},
		{Resource: "secrets", Namespace: "shop", Name: "a/b"},
		{Resource: "secrets", Namespace: "shop", Name: "a%2Fb"},
		{Resource: "secrets", Namespace: "shop", Name: "a b"},
		{Resource: "secrets", Namespace: "shop"},
	} {
		assert.NotEmpty(t, CheckObjectRefs([]ObjectRef{r}), "%+v", r)
	}
	assert.Empty(t, CheckObjectRefs([]ObjectRef{{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web-1.a"}}))
}

// TestCheckBackupAnswer: an answer is the same object changed, or none;
// what it asks for is bounded and named; an error answer keeps the
// contract (the item fails by the extension's choice).
func TestCheckBackupAnswer(t *testing.T) {
	sent := json.RawMessage(`{"apiVersion":"demo.cairn.io/v1","kind":"Widget","metadata":{"name":"w","namespace":"shop"}}`)
	ok := []BackupItemAnswer{
		{},
		{Error: "cannot"},
		{Item: json.RawMessage(`{"apiVersion":"demo.cairn.io/v2","kind":"Widget","metadata":{"name":"w","namespace":"shop","labels":{"a":"b"}}}`)},
		{Operation: &OperationStart{ID: "export-1", ItemsToUpdate: []ObjectRef{{Group: "demo.cairn.io", Resource: "widgets", Namespace: "shop", Name: "w"}}}},
	}
	for _, ans := range ok {
		assert.Empty(t, CheckBackupAnswer(sent, ans), "%+v", ans)
	}
	for want, ans := range map[string]BackupItemAnswer{
		"answered with Widget shop/other, another object": {Item: json.RawMessage(`{"apiVersion":"demo.cairn.io/v1","kind":"Widget","metadata":{"name":"other","namespace":"shop"}}`)},
		"answered with Widget kube-system/w":              {Item: json.RawMessage(`{"apiVersion":"demo.cairn.io/v1","kind":"Widget","metadata":{"name":"w","namespace":"kube-system"}}`)},
		"answered with Secret shop/w":                     {Item: json.RawMessage(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"w","namespace":"shop"}}`)},
		"answered with Widget shop/w, another":            {Item: json.RawMessage(`{"apiVersion":"other.example/v1","kind":"Widget","metadata":{"name":"w","namespace":"shop"}}`)},
		"its item is not a Kubernetes object":             {Item: json.RawMessage(`[1,2]`)},
		"101 additional items, more than 100":             {AdditionalItems: make([]ObjectRef, MaxAdditionalItems+1)},
		"resource and name are required":                  {AdditionalItems: []ObjectRef{{Resource: "configmaps"}}},
		"operation without an id":                         {Operation: &OperationStart{}},
		"is not printable text":                           {Operation: &OperationStart{ID: "a\nb"}},
		"operation id of 201 bytes":                       {Operation: &OperationStart{ID: strings.Repeat("x", MaxOperationIDBytes+1)}},
		"operation data of":                               {Operation: &OperationStart{ID: "x", Data: json.RawMessage(`"` + strings.Repeat("x", MaxOperationDataBytes) + `"`)}},
		"not a name":                                      {Operation: &OperationStart{ID: "x", ItemsToUpdate: []ObjectRef{{Resource: "widgets", Name: ".."}}}},
	} {
		assert.Contains(t, CheckBackupAnswer(sent, ans), want)
	}
}

func TestCheckRestoreAnswer(t *testing.T) {
	sent := json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`)
	assert.Empty(t, CheckRestoreAnswer(sent, RestoreItemAnswer{Skip: "not here"}))
	assert.Empty(t, CheckRestoreAnswer(sent, RestoreItemAnswer{Item: sent}))
	assert.Contains(t, CheckRestoreAnswer(sent, RestoreItemAnswer{Item: json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod"}}`)}),
		"answered with Deployment prod/web, another object")
}

func TestCheckRestoreAnswerOperation(t *testing.T) {
	sent := json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`)
	assert.Empty(t, CheckRestoreAnswer(sent, RestoreItemAnswer{Operation: &OperationStart{ID: "import/web", Data: json.RawMessage(`{}`)}}))
	assert.Equal(t, "operation without an id", CheckRestoreAnswer(sent, RestoreItemAnswer{Operation: &OperationStart{}}))
	assert.Equal(t, "a restore operation has no items to update", CheckRestoreAnswer(sent, RestoreItemAnswer{
		Operation: &OperationStart{ID: "x", ItemsToUpdate: []ObjectRef{{Resource: "configmaps", Name: "c"}}}}))
}

func TestCheckRestoreAnswerWait(t *testing.T) {
	sent := json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop"}}`)
	claim := []ObjectRef{{Resource: "persistentvolumeclaims", Namespace: "shop", Name: "data"}}
	assert.Empty(t, CheckRestoreAnswer(sent, RestoreItemAnswer{WaitFor: &WaitFor{Items: claim}}))
	assert.Empty(t, CheckRestoreAnswer(sent, RestoreItemAnswer{WaitFor: &WaitFor{Items: claim, Timeout: "90s"}}))
	for want, w := range map[string]WaitFor{
		"waits for 0 objects":                     {},
		"wait timeout \"soon\" is not a duration": {Items: claim, Timeout: "soon"},
		"wait timeout 2h0m0s is not between":      {Items: claim, Timeout: "2h"},
		"not a name":                              {Items: []ObjectRef{{Resource: "pods", Name: ".."}}},
	} {
		assert.Contains(t, CheckRestoreAnswer(sent, RestoreItemAnswer{WaitFor: &w}), want)
	}
}

func TestCheckRestoreAnswerAdditionalItems(t *testing.T) {
	sent := json.RawMessage(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"token","namespace":"shop"}}`)
	account := []ObjectRef{{Resource: "serviceaccounts", Namespace: "shop", Name: "builder"}}
	assert.Empty(t, CheckRestoreAnswer(sent, RestoreItemAnswer{AdditionalItems: account}))
	assert.Equal(t, "101 additional items, more than 100",
		CheckRestoreAnswer(sent, RestoreItemAnswer{AdditionalItems: make([]ObjectRef, MaxAdditionalItems+1)}))
	assert.Contains(t, CheckRestoreAnswer(sent, RestoreItemAnswer{AdditionalItems: []ObjectRef{{Resource: "serviceaccounts"}}}),
		"resource and name are required")
}
