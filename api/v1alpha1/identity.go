package v1alpha1

import (
	"slices"
	"strings"
)

// Identity is whom a run acts as towards the Kubernetes API server: the
// caller of the starter API as the cluster's TokenReview named them. It
// never holds a credential; the worker impersonates it, so the cluster's
// RBAC, its rules against escalation, Pod Security and admission decide
// what the run may read and write, exactly as for the caller's kubectl.
//
// +kubebuilder:object:generate=true
type Identity struct {
	Username string              `json:"username"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// ActingAsWorker is how a run without an Identity is described: it came
// on Temporal's path (the CLI without --server, a schedule made there)
// and acts with the worker's own rights.
const ActingAsWorker = "the worker (started on Temporal's path)"

// Describe is a one-line account of whom a run acts as.
func (id *Identity) Describe() string {
	if id == nil {
		return ActingAsWorker
	}
	groups := slices.Clone(id.Groups)
	slices.Sort(groups)
	if len(groups) == 0 {
		return id.Username
	}
	return id.Username + " (groups " + strings.Join(groups, ", ") + ")"
}

// UsernameOrWorker is the value of the CairnActingAs search attribute.
func (id *Identity) UsernameOrWorker() string {
	if id == nil {
		return "worker"
	}
	return id.Username
}
