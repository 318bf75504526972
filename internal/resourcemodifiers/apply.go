package resourcemodifiers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// maxDocumentBytes bounds an object while it is patched: each JSON Patch
// copy can double it, so a few dozen would exhaust memory. Kubernetes
// stores objects of at most a few MiB.
const maxDocumentBytes = 16 << 20

// Apply applies, in order, every rule whose conditions hold for obj and
// changes obj in place. groupResource is the object's type, as
// "deployments.apps", or "configmaps" for the core group. As in Velero,
// conditions look at obj as it came, not as earlier rules left it.
//
// It returns the names of the rules that changed the object,
// "resourceModifierRules[N]", in order; a rule that matched but left the
// object as it was is not listed. A rule whose JSON Patch "test" operation
// fails is skipped, not an error: Velero documents test as a way to patch
// only objects that hold a value. An error is a patch that cannot apply to
// this object; it names the rule and the patch, and obj is left unchanged.
func (r *Rules) Apply(obj *unstructured.Unstructured, groupResource string) ([]string, error) {
	if r.Len() == 0 {
		return nil, nil
	}
	if obj == nil {
		return nil, errors.New("apply resource modifiers: nil object")
	}
	encoded, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("apply resource modifiers: encoding the object: %w", err)
	}
	// Both sides of the "did this rule change anything" test go through
	// canonicalJSON, so a number that was a float and is now an int64, or
	// keys in another order, count as no change.
	doc, err := canonicalJSON(encoded)
	if err != nil {
		return nil, fmt.Errorf("apply resource modifiers: decoding the object: %w", err)
	}
	subject := &target{obj: obj, groupResource: groupResource, encoded: encoded}
	var changedBy []string
	for i := range r.rules {
		rl := &r.rules[i]
		holds, err := rl.conditions.hold(subject)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rl.name, err)
		}
		if !holds {
			continue
		}
		patched, skipped, err := rl.patch(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rl.name, err)
		}
		if skipped {
			continue
		}
		patched, err = canonicalJSON(patched)
		if err != nil {
			return nil, fmt.Errorf("%s: the patched object: %w", rl.name, err)
		}
		if bytes.Equal(patched, doc) {
			continue
		}
		doc = patched
		changedBy = append(changedBy, rl.name)
	}
	if len(changedBy) == 0 {
		return nil, nil
	}
	var content map[string]any
	if err := utiljson.Unmarshal(doc, &content); err != nil {
		return nil, fmt.Errorf("apply resource modifiers: decoding the patched object: %w", err)
	}
	// Parse refuses patches that name the identity fields; this holds
	// whatever way a patch found around that.
	patched := unstructured.Unstructured{Object: content}
	if patched.GetName() != obj.GetName() || patched.GetNamespace() != obj.GetNamespace() {
		return nil, fmt.Errorf("%v: %w", changedBy, errMovesObject)
	}
	obj.SetUnstructuredContent(content)
	return changedBy, nil
}

// patch applies the rule's patches to doc, JSON Patch operations first,
// then merge patches, then strategic ones. skipped reports a failed "test"
// operation, which leaves the whole rule out.
func (rl *rule) patch(doc []byte) (patched []byte, skipped bool, err error) {
	for i, op := range rl.jsonPatch {
		next, err := op.apply(doc)
		if err != nil {
			if errors.Is(err, errTestFailed) {
				return nil, true, nil
			}
			return nil, false, fmt.Errorf("patches[%d] (%s): %w", i, op.summary, err)
		}
		if len(next) > maxDocumentBytes {
			return nil, false, fmt.Errorf("patches[%d] (%s): the object grew past %d bytes", i, op.summary, maxDocumentBytes)
		}
		doc = next
	}
	for i, p := range rl.mergePatches {
		next, err := applyMergePatch(doc, p)
		if err != nil {
			return nil, false, fmt.Errorf("mergePatches[%d]: %w", i, err)
		}
		doc = next
	}
	for i, p := range rl.strategicPatches {
		next, err := applyStrategicPatch(doc, p)
		if err != nil {
			return nil, false, fmt.Errorf("strategicPatches[%d]: %w", i, err)
		}
		doc = next
	}
	return doc, false, nil
}

// canonicalJSON re-encodes a JSON object with sorted keys and integers as
// int64, the form unstructured objects hold.
func canonicalJSON(doc []byte) ([]byte, error) {
	var object map[string]any
	if err := utiljson.Unmarshal(doc, &object); err != nil {
		return nil, err
	}
	if object == nil {
		return nil, errors.New("not a JSON object")
	}
	return json.Marshal(object)
}
