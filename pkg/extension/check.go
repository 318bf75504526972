package extension

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The checks cairn applies to every answer. An answer that fails one
// fails its item with the reason; an extension's tests can hold its
// answers to them (extensiontest does).

// CheckBackupAnswer says what is wrong with the answer to the item sent;
// "" when it keeps the contract. An answer with Error keeps it: the item
// fails by the extension's choice.
func CheckBackupAnswer(sent json.RawMessage, ans BackupItemAnswer) string {
	if ans.Error != "" {
		return ""
	}
	if len(ans.AdditionalItems) > MaxAdditionalItems {
		return fmt.Sprintf("%d additional items, more than %d", len(ans.AdditionalItems), MaxAdditionalItems)
	}
	if p := CheckObjectRefs(ans.AdditionalItems); p != "" {
		return p
	}
	if ans.Operation != nil {
		if p := CheckOperation(ans.Operation); p != "" {
			return p
		}
	}
	return checkSameObject(sent, ans.Item)
}

// CheckRestoreAnswer says what is wrong with the answer to the item sent;
// "" when it keeps the contract.
func CheckRestoreAnswer(sent json.RawMessage, ans RestoreItemAnswer) string {
	if ans.Error != "" || ans.Skip != "" {
		return ""
	}
	if len(ans.AdditionalItems) > MaxAdditionalItems {
		return fmt.Sprintf("%d additional items, more than %d", len(ans.AdditionalItems), MaxAdditionalItems)
	}
	if p := CheckObjectRefs(ans.AdditionalItems); p != "" {
		return p
	}
	if w := ans.WaitFor; w != nil {
		if len(w.Items) == 0 || len(w.Items) > MaxAdditionalItems {
			return fmt.Sprintf("waits for %d objects: give 1 to %d", len(w.Items), MaxAdditionalItems)
		}
		if p := CheckObjectRefs(w.Items); p != "" {
			return p
		}
		if _, err := w.WaitTimeout(); err != nil {
			return err.Error()
		}
	}
	if ans.Operation != nil {
		if len(ans.Operation.ItemsToUpdate) > 0 {
			return "a restore operation has no items to update"
		}
		if p := CheckOperation(ans.Operation); p != "" {
			return p
		}
	}
	return checkSameObject(sent, ans.Item)
}

// Unchanged reports whether an answer's item means "the item as it was
// sent": absent, empty or JSON null (what most languages write for none).
func Unchanged(item json.RawMessage) bool {
	trimmed := bytes.TrimSpace(item)
	return len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null"))
}

// CheckObjectRefs says what is wrong with the first malformed reference;
// "" when none is.
func CheckObjectRefs(refs []ObjectRef) string {
	for _, r := range refs {
		switch {
		case r.Resource == "" || r.Name == "":
			return fmt.Sprintf("object %+v: resource and name are required", r)
		case !isPathSegment(r.Group, r.Resource, r.Namespace, r.Name):
			// Names become parts of the API path: "." or ".." would read
			// another object, or a whole list, as one item.
			return fmt.Sprintf("object %+v: not a name", r)
		}
	}
	return ""
}

// CheckOperation says what is wrong with an operation an answer starts;
// "" when nothing is.
func CheckOperation(op *OperationStart) string {
	switch {
	case op.ID == "":
		return "operation without an id"
	case len(op.ID) > MaxOperationIDBytes:
		return fmt.Sprintf("operation id of %d bytes, more than %d", len(op.ID), MaxOperationIDBytes)
	case !utf8.ValidString(op.ID) || strings.IndexFunc(op.ID, unicode.IsControl) >= 0:
		return fmt.Sprintf("operation id %q is not printable text", op.ID)
	case len(op.Data) > MaxOperationDataBytes:
		return fmt.Sprintf("operation data of %d bytes, more than %d", len(op.Data), MaxOperationDataBytes)
	case len(op.ItemsToUpdate) > MaxAdditionalItems:
		return fmt.Sprintf("operation with %d items to update, more than %d", len(op.ItemsToUpdate), MaxAdditionalItems)
	}
	return CheckObjectRefs(op.ItemsToUpdate)
}

// isPathSegment reports whether every non-empty name is one segment of
// an API path, as the API server requires of names: not "." or "..",
// without "/", "%" or spaces.
func isPathSegment(names ...string) bool {
	for _, n := range names {
		if n != "" && (n == "." || n == ".." || strings.ContainsAny(n, "/% ")) {
			return false
		}
	}
	return true
}

// objectID is what names an object: its API group, kind, namespace and
// name.
type objectID struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func (o objectID) group() string {
	if i := strings.LastIndex(o.APIVersion, "/"); i >= 0 {
		return o.APIVersion[:i]
	}
	return ""
}

func (o objectID) String() string {
	name := o.Metadata.Name
	if o.Metadata.Namespace != "" {
		name = o.Metadata.Namespace + "/" + name
	}
	return o.Kind + " " + name
}

// checkSameObject says why answered is not the object sent, changed;
// "" when it is, or when it is empty (the item as sent).
func checkSameObject(sent, answered json.RawMessage) string {
	if Unchanged(answered) {
		return ""
	}
	var a, s objectID
	if err := json.Unmarshal(answered, &a); err != nil || a.Kind == "" || a.Metadata.Name == "" {
		return "its item is not a Kubernetes object"
	}
	if err := json.Unmarshal(sent, &s); err != nil {
		return "the item sent is not a Kubernetes object"
	}
	if a.group() != s.group() || a.Kind != s.Kind || a.Metadata.Namespace != s.Metadata.Namespace || a.Metadata.Name != s.Metadata.Name {
		return fmt.Sprintf("answered with %s, another object than the one it was given", a)
	}
	return ""
}
