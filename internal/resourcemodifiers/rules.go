package resourcemodifiers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("invalid resource modifiers")

const supportedVersion = "v1"

// Rules is a parsed resource-modifier document.
type Rules struct {
	rules []rule
}

// rule is one entry of resourceModifierRules, ready to apply. A rule may
// hold several kinds of patches (Velero refuses that); they apply in the
// order Velero prefers them: JSON Patch, then merge, then strategic.
type rule struct {
	name             string // "resourceModifierRules[N]", for errors and Apply's result
	conditions       conditions
	jsonPatch        []jsonPatchOp
	mergePatches     [][]byte // JSON objects
	strategicPatches [][]byte // JSON objects
}

// documentSpec is the document's top level. Rules stay raw so that each is
// decoded on its own and its errors can name it.
type documentSpec struct {
	Version string            `json:"version"`
	Rules   []json.RawMessage `json:"resourceModifierRules"`
}

type ruleSpec struct {
	Conditions       conditionsSpec  `json:"conditions"`
	Patches          []jsonPatchSpec `json:"patches,omitempty"`
	MergePatches     []patchDataSpec `json:"mergePatches,omitempty"`
	StrategicPatches []patchDataSpec `json:"strategicPatches,omitempty"`
}

// Parse reads a document, YAML or JSON. It refuses (error wrapping
// ErrInvalid) malformed YAML/JSON, unknown fields, a version other than v1,
// a document without rules, a rule without groupResource, a bad regex,
// glob or label selector, a patch that is not valid, and a rule with no
// patch at all. Errors about a rule name it: "resourceModifierRules[2]: ...".
func Parse(data []byte) (*Rules, error) {
	var doc documentSpec
	// Strict: unknown fields and duplicate keys are refused. The YAML
	// decoder reads JSON too.
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	// Velero compares the version without case.
	if !strings.EqualFold(doc.Version, supportedVersion) {
		return nil, fmt.Errorf("%w: version %q is not supported, want %q", ErrInvalid, doc.Version, supportedVersion)
	}
	if len(doc.Rules) == 0 {
		return nil, fmt.Errorf("%w: resourceModifierRules is empty", ErrInvalid)
	}
	parsed := &Rules{rules: make([]rule, 0, len(doc.Rules))}
	for i, raw := range doc.Rules {
		name := fmt.Sprintf("resourceModifierRules[%d]", i)
		r, err := parseRule(name, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
		}
		parsed.rules = append(parsed.rules, r)
	}
	return parsed, nil
}

// Len is the number of rules.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.rules)
}

// parseRule decodes and checks one rule. raw is JSON, which the YAML
// decoder reads too; going through it, rather than encoding/json, turns
// unquoted numbers and booleans into the strings the fields hold (value: 3,
// matchLabels: {tier: 1}) as Velero's decoder does.
func parseRule(name string, raw json.RawMessage) (rule, error) {
	var spec ruleSpec
	if err := yaml.UnmarshalStrict(raw, &spec); err != nil {
		return rule{}, err
	}
	if len(spec.Patches)+len(spec.MergePatches)+len(spec.StrategicPatches) == 0 {
		return rule{}, errors.New("no patch: set patches, mergePatches or strategicPatches")
	}
	conds, err := compileConditions(spec.Conditions)
	if err != nil {
		return rule{}, fmt.Errorf("conditions: %w", err)
	}
	r := rule{name: name, conditions: conds}
	for i, p := range spec.Patches {
		op, err := compileJSONPatchOp(p)
		if err != nil {
			return rule{}, fmt.Errorf("patches[%d]: %w", i, err)
		}
		r.jsonPatch = append(r.jsonPatch, op)
	}
	for i, p := range spec.MergePatches {
		patch, err := compilePatchData(p.PatchData)
		if err != nil {
			return rule{}, fmt.Errorf("mergePatches[%d]: %w", i, err)
		}
		r.mergePatches = append(r.mergePatches, patch)
	}
	for i, p := range spec.StrategicPatches {
		patch, err := compilePatchData(p.PatchData)
		if err != nil {
			return rule{}, fmt.Errorf("strategicPatches[%d]: %w", i, err)
		}
		r.strategicPatches = append(r.strategicPatches, patch)
	}
	return r, nil
}
