// Package volumepolicy reads volume policies and decides, for each volume of
// a backup, whether it is skipped, snapshotted or backed up from its file
// system.
//
// The document format is Velero's resource policies format (version v1, top
// key volumePolicies), so files written for Velero keep working. The first
// policy whose conditions all hold decides; a policy without conditions holds
// for every volume. Parse refuses whatever cairn cannot honour instead of
// ignoring it: includeExcludePolicy, the custom action, and volume types other
// than csi and nfs.
package volumepolicy

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("invalid volume policies")

// ActionType is what a policy does with a volume.
type ActionType string

// The action types cairn carries out; Velero's "custom" is refused by Parse.
const (
	Skip     ActionType = "skip"
	Snapshot ActionType = "snapshot"
	FSBackup ActionType = "fs-backup"
)

// Action is a policy's decision.
type Action struct {
	Type ActionType
	// Policy names the policy that decided, "volumePolicies[N]", for results.
	Policy string
}

// Policies is a parsed document. The nil *Policies matches no volume.
type Policies struct {
	policies []policy
}

type policy struct {
	name       string
	action     ActionType
	conditions []condition
}

// Parse reads a YAML or JSON document. Its errors wrap ErrInvalid and name the
// offending policy as "volumePolicies[N]".
func Parse(data []byte) (*Policies, error) {
	p, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return p, nil
}

func parse(data []byte) (*Policies, error) {
	doc, err := decodeDocument(data)
	if err != nil {
		return nil, err
	}
	p := &Policies{policies: make([]policy, 0, len(doc.VolumePolicies))}
	for i, raw := range doc.VolumePolicies {
		name := fmt.Sprintf("volumePolicies[%d]", i)
		pol, err := compilePolicy(name, raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p.policies = append(p.policies, pol)
	}
	return p, nil
}

func compilePolicy(name string, raw []byte) (policy, error) {
	var doc policyDoc
	if err := decodeStrict(raw, &doc); err != nil {
		return policy{}, err
	}
	action, err := actionType(doc.Action.Type)
	if err != nil {
		return policy{}, fmt.Errorf("action: %w", err)
	}
	conditions, err := compileConditions(doc.Conditions)
	if err != nil {
		return policy{}, err
	}
	return policy{name: name, action: action, conditions: conditions}, nil
}

func actionType(s string) (ActionType, error) {
	switch t := ActionType(s); t {
	case Skip, Snapshot, FSBackup:
		return t, nil
	case "":
		return "", errors.New("type is missing")
	case "custom":
		return "", errors.New(`type "custom" is not supported: cairn runs no Velero plugins to hand the volume to`)
	default:
		return "", fmt.Errorf("unknown type %q (want %s, %s or %s)", s, Skip, Snapshot, FSBackup)
	}
}

// Match returns the action of the first policy whose conditions all hold for
// v, and whether one did.
func (p *Policies) Match(v Volume) (Action, bool) {
	if p == nil {
		return Action{}, false
	}
	for _, pol := range p.policies {
		if pol.holds(v) {
			return Action{Type: pol.action, Policy: pol.name}, true
		}
	}
	return Action{}, false
}

func (pol policy) holds(v Volume) bool {
	for _, c := range pol.conditions {
		if !c(v) {
			return false
		}
	}
	return true
}

// Len is the number of policies.
func (p *Policies) Len() int {
	if p == nil {
		return 0
	}
	return len(p.policies)
}
