package v1alpha1

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of a post-restore exec hook (Velero's exec timeout; a bounded
// wait, where Velero waits forever).
const (
	DefaultRestoreExecTimeout = 30 * time.Second
	DefaultRestoreWaitTimeout = 10 * time.Minute
)

// HookPostRestore is the phase of an exec hook in a restored pod.
const HookPostRestore HookPhase = "post-restore"

// RestoreHooks are the hooks of a restore spec (Velero's spec.hooks).
//
// +kubebuilder:object:generate=true
type RestoreHooks struct {
	Resources []RestoreResourceHook `json:"resources,omitempty"`
}

// RestoreResourceHook selects restored pods, by their backed-up namespace
// and labels, and names their hooks. A pod with restore hook annotations
// runs those instead, as in Velero.
//
// +kubebuilder:object:generate=true
type RestoreResourceHook struct {
	Name               string                `json:"name"`
	IncludedNamespaces []string              `json:"includedNamespaces,omitempty"`
	ExcludedNamespaces []string              `json:"excludedNamespaces,omitempty"`
	LabelSelector      *metav1.LabelSelector `json:"labelSelector,omitempty"`
	PostHooks          []RestoreHook         `json:"postHooks,omitempty"`
}

// RestoreHook is an init hook or an exec hook.
//
// +kubebuilder:object:generate=true
type RestoreHook struct {
	Init *InitRestoreHook `json:"init,omitempty"`
	Exec *ExecRestoreHook `json:"exec,omitempty"`
}

// InitRestoreHook adds init containers to a restored pod, before its own.
//
// +kubebuilder:object:generate=true
type InitRestoreHook struct {
	InitContainers []corev1.Container `json:"initContainers"`
}

// ExecRestoreHook runs a command in a restored pod's container once it
// runs (or is ready, with WaitForReady).
//
// +kubebuilder:object:generate=true
type ExecRestoreHook struct {
	Container    string           `json:"container,omitempty"`
	Command      []string         `json:"command"`
	OnError      HookOnError      `json:"onError,omitempty"`
	ExecTimeout  *metav1.Duration `json:"execTimeout,omitempty"`
	WaitTimeout  *metav1.Duration `json:"waitTimeout,omitempty"`
	WaitForReady bool             `json:"waitForReady,omitempty"`
}

// problems lists what is wrong with a restore spec's hooks.
func (h *RestoreHooks) problems() []string {
	if h == nil {
		return nil
	}
	var problems []string
	names := map[string]bool{}
	for i, r := range h.Resources {
		where := fmt.Sprintf("hooks.resources[%d]", i)
		problems = append(problems, selectionProblems(where, r.Name, names, r.IncludedNamespaces, r.ExcludedNamespaces, r.LabelSelector)...)
		if len(r.PostHooks) == 0 {
			problems = append(problems, where+": has no postHooks")
		}
		for j, hook := range r.PostHooks {
			problems = append(problems, hook.problems(fmt.Sprintf("%s.postHooks[%d]", where, j))...)
		}
	}
	return problems
}

func (h RestoreHook) problems(where string) []string {
	if (h.Init == nil) == (h.Exec == nil) {
		return []string{where + ": exactly one of init and exec is required"}
	}
	var problems []string
	if i := h.Init; i != nil {
		if len(i.InitContainers) == 0 {
			problems = append(problems, where+": init.initContainers is empty")
		}
		for k, c := range i.InitContainers {
			if c.Name == "" || c.Image == "" {
				problems = append(problems, fmt.Sprintf("%s: init.initContainers[%d] needs a name and an image", where, k))
			}
		}
		return problems
	}
	e := h.Exec
	if len(e.Command) == 0 {
		problems = append(problems, where+": exec.command is required")
	}
	switch e.OnError {
	case "", HookFail, HookContinue:
	default:
		problems = append(problems, fmt.Sprintf("%s: exec.onError %q must be Fail or Continue", where, e.OnError))
	}
	problems = append(problems, negative(where+": exec.execTimeout", e.ExecTimeout)...)
	return append(problems, negative(where+": exec.waitTimeout", e.WaitTimeout)...)
}

func negative(what string, d *metav1.Duration) []string {
	if d != nil && d.Duration < 0 {
		return []string{fmt.Sprintf("%s %s must not be negative", what, d.Duration)}
	}
	return nil
}

// RestoreExecHook is a post-restore exec hook resolved for one pod.
type RestoreExecHook struct {
	PodHook
	WaitTimeout  time.Duration `json:"waitTimeout"`
	WaitForReady bool          `json:"waitForReady,omitempty"`
}

// RestoreHooksInput runs the post-restore exec hooks of the pods a
// restore created.
type RestoreHooksInput struct {
	Restore  string        `json:"restore"`
	Backup   string        `json:"backup"`
	Location string        `json:"location"`
	Hooks    *RestoreHooks `json:"hooks,omitempty"`
	// NamespaceMapping is the restore's: spec hooks select pods by their
	// backed-up namespace.
	NamespaceMapping map[string]string `json:"namespaceMapping,omitempty"`
	// ActingAs is whom the hooks run as (nil: the worker): their exec
	// needs that identity's pods/exec.
	ActingAs *Identity `json:"actingAs,omitempty"`
}

// RestoreHooksResult lists what the hooks did, by pod.
type RestoreHooksResult struct {
	Results []HookResult `json:"results"`
}
