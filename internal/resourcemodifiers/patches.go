package resourcemodifiers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// jsonPatchSpec is one JSON Patch operation as Velero writes it: value is
// a string, read by veleroValueJSON.
type jsonPatchSpec struct {
	Operation string `json:"operation"`
	From      string `json:"from,omitempty"`
	Path      string `json:"path"`
	Value     string `json:"value,omitempty"`
}

type patchDataSpec struct {
	PatchData string `json:"patchData"`
}

// jsonPatchOp is one checked JSON Patch operation.
type jsonPatchOp struct {
	kind      string // add, remove, replace, move, copy or test
	operation jsonpatch.Operation
	// mustExist is the decoded pointer that has to name a value before the
	// operation runs: the path of replace and test, the from of move and copy.
	mustExist []string
	summary   string // for errors: "replace /spec/replicas"
}

func compileJSONPatchOp(spec jsonPatchSpec) (jsonPatchOp, error) {
	// Velero's check ignores case but its patch library does not; lower
	// case makes "Replace" work instead of failing on every object.
	kind := strings.ToLower(spec.Operation)
	op := jsonpatch.Operation{}
	summary := kind + " " + spec.Path
	var mustExist, from []string
	switch kind {
	case "add", "replace", "test":
		value, err := veleroValueJSON(spec.Value)
		if err != nil {
			return jsonPatchOp{}, fmt.Errorf("value: %w", err)
		}
		op["value"] = rawJSON(value)
	case "remove":
	case "move", "copy":
		var err error
		from, err = parsePointer(spec.From)
		if err != nil {
			return jsonPatchOp{}, fmt.Errorf("from: %w", err)
		}
		op["from"] = rawJSON(mustMarshalString(spec.From))
		mustExist = from
		summary = kind + " " + spec.From + " to " + spec.Path
	case "":
		return jsonPatchOp{}, errors.New("operation is required")
	default:
		return jsonPatchOp{}, fmt.Errorf("unknown operation %q, want add, remove, replace, move, copy or test", spec.Operation)
	}
	path, err := parsePointer(spec.Path)
	if err != nil {
		return jsonPatchOp{}, fmt.Errorf("path: %w", err)
	}
	if kind == "replace" || kind == "test" {
		mustExist = path
	}
	if err := checkJSONPatchIdentity(kind, path, from); err != nil {
		return jsonPatchOp{}, fmt.Errorf("%s: %w", summary, err)
	}
	op["op"] = rawJSON(mustMarshalString(kind))
	op["path"] = rawJSON(mustMarshalString(spec.Path))
	return jsonPatchOp{kind: kind, operation: op, mustExist: mustExist, summary: summary}, nil
}

// errTestFailed is a "test" operation that did not hold.
var errTestFailed = errors.New("test failed")

// apply applies the operation to doc. The v4 library replaces a missing
// object member as if the operation were "add", copies a missing member as
// null, and passes a test for null on a missing member; RFC 6902 and
// Velero's newer library fail all three, hence mustExist.
func (o jsonPatchOp) apply(doc []byte) ([]byte, error) {
	if o.mustExist != nil {
		var generic any
		if err := json.Unmarshal(doc, &generic); err != nil {
			return nil, err
		}
		if _, found := lookupPointer(generic, o.mustExist); !found {
			if o.kind == "test" {
				return nil, errTestFailed
			}
			if o.kind == "replace" {
				return nil, errors.New("the path does not exist")
			}
			return nil, errors.New("the from path does not exist")
		}
	}
	patched, err := jsonpatch.Patch{o.operation}.Apply(doc)
	if err != nil && o.kind == "test" {
		return nil, fmt.Errorf("%w: %w", errTestFailed, err)
	}
	return patched, err
}

func rawJSON(b []byte) *json.RawMessage {
	raw := json.RawMessage(b)
	return &raw
}

// mustMarshalString encodes a string as JSON, which cannot fail.
func mustMarshalString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// compilePatchData reads a merge or strategic patch, YAML or JSON, and
// returns it as a JSON object.
func compilePatchData(data string) ([]byte, error) {
	patch, err := yaml.YAMLToJSONStrict([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("patchData: %w", err)
	}
	var object map[string]any
	if err := json.Unmarshal(patch, &object); err != nil || object == nil {
		return nil, errors.New("patchData must be an object")
	}
	if err := checkPatchDataIdentity(patch); err != nil {
		return nil, err
	}
	return patch, nil
}

func applyMergePatch(doc, patch []byte) ([]byte, error) {
	return jsonpatch.MergePatch(doc, patch)
}

// applyStrategicPatch needs the Go type of the object's kind for the merge
// keys of its lists. A kind the client-go scheme does not know (a custom
// resource) is an error, as in Velero, whose patcher fails when its scheme
// cannot make the type: guessing would replace lists a merge key should
// merge. Merge patches are the tool for custom resources.
func applyStrategicPatch(doc, patch []byte) ([]byte, error) {
	var original, patchMap map[string]any
	// util/json keeps integers as int64, so large ones survive the trip.
	if err := utiljson.Unmarshal(doc, &original); err != nil {
		return nil, err
	}
	if err := utiljson.Unmarshal(patch, &patchMap); err != nil {
		return nil, err
	}
	gvk := (&unstructured.Unstructured{Object: original}).GroupVersionKind()
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s is not a built-in kind, so a strategic merge patch cannot apply to it (use mergePatches): %w", gvk, err)
	}
	patched, err := strategicMergeMapPatch(original, patchMap, typed)
	if err != nil {
		return nil, err
	}
	return json.Marshal(patched)
}

// strategicMergeMapPatch calls the library, which panics on some malformed
// patches (a list item whose merge key holds an object): the document may
// be hostile and must not bring the restore down.
func strategicMergeMapPatch(original, patch map[string]any, typed runtime.Object) (patched map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			patched, err = nil, fmt.Errorf("malformed strategic merge patch: %v", r)
		}
	}()
	return strategicpatch.StrategicMergeMapPatch(original, patch, typed)
}
