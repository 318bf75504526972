package v1alpha1

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/internal/filter"
)

// HookOnError says what a failed hook does to its pod's backup.
//
// +kubebuilder:validation:Enum=Fail;Continue
type HookOnError string

const (
	// HookFail (the default): a failed pre hook keeps the pod's volumes
	// from being snapshotted; any failed hook makes the backup
	// PartiallyFailed.
	HookFail HookOnError = "Fail"
	// HookContinue: a failed hook is a warning and the backup goes on.
	HookContinue HookOnError = "Continue"
)

// DefaultHookTimeout bounds a backup hook whose timeout is not set
// (Velero's default).
const DefaultHookTimeout = 30 * time.Second

// DefaultMaxHookTimeout bounds every hook's timeout, and a restore hook's
// wait for its container, whatever a pod's annotation or a spec asks: a
// pre hook freezes an application, and a run must not hold it for days.
// Workers take another bound with --max-hook-timeout.
const DefaultMaxHookTimeout = 30 * time.Minute

// MaxHookedPods bounds the pods with hooks one backup runs: each adds two
// activities to the backup's history.
const MaxHookedPods = 500

// BackupHooks are the hooks of a backup spec (Velero's spec.hooks).
//
// +kubebuilder:object:generate=true
type BackupHooks struct {
	Resources []BackupResourceHook `json:"resources,omitempty"`
}

// BackupResourceHook selects pods and names the hooks to run in them
// before and after their volumes are snapshotted. A pod with hook
// annotations runs those instead, as in Velero.
//
// +kubebuilder:object:generate=true
type BackupResourceHook struct {
	Name               string                `json:"name"`
	IncludedNamespaces []string              `json:"includedNamespaces,omitempty"`
	ExcludedNamespaces []string              `json:"excludedNamespaces,omitempty"`
	LabelSelector      *metav1.LabelSelector `json:"labelSelector,omitempty"`
	Pre                []BackupHook          `json:"pre,omitempty"`
	Post               []BackupHook          `json:"post,omitempty"`
}

// BackupHook is one hook; exec is the only kind.
//
// +kubebuilder:object:generate=true
type BackupHook struct {
	Exec *ExecHook `json:"exec"`
}

// ExecHook runs a command in a container of a pod, through the API server.
//
// +kubebuilder:object:generate=true
type ExecHook struct {
	// Container is the container's name (empty: the pod's first).
	Container string   `json:"container,omitempty"`
	Command   []string `json:"command"`
	// OnError is Fail or Continue (empty: Fail).
	OnError HookOnError `json:"onError,omitempty"`
	// Timeout bounds the command (nil: DefaultHookTimeout).
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// problems lists what is wrong with a hook, prefixed by where it is.
func (h BackupHook) problems(where string) []string {
	if h.Exec == nil {
		return []string{where + ": exec is required"}
	}
	var problems []string
	if len(h.Exec.Command) == 0 {
		problems = append(problems, where+": exec.command is required")
	}
	switch h.Exec.OnError {
	case "", HookFail, HookContinue:
	default:
		problems = append(problems, fmt.Sprintf("%s: exec.onError %q must be Fail or Continue", where, h.Exec.OnError))
	}
	if t := h.Exec.Timeout; t != nil && t.Duration < 0 {
		problems = append(problems, fmt.Sprintf("%s: exec.timeout %s must not be negative", where, t.Duration))
	}
	return problems
}

// problems lists what is wrong with a spec's hooks.
func (h *BackupHooks) problems() []string {
	if h == nil {
		return nil
	}
	var problems []string
	names := map[string]bool{}
	for i, r := range h.Resources {
		where := fmt.Sprintf("hooks.resources[%d]", i)
		problems = append(problems, selectionProblems(where, r.Name, names, r.IncludedNamespaces, r.ExcludedNamespaces, r.LabelSelector)...)
		if len(r.Pre) == 0 && len(r.Post) == 0 {
			problems = append(problems, where+": has neither pre nor post hooks")
		}
		for j, hook := range r.Pre {
			problems = append(problems, hook.problems(fmt.Sprintf("%s.pre[%d]", where, j))...)
		}
		for j, hook := range r.Post {
			problems = append(problems, hook.problems(fmt.Sprintf("%s.post[%d]", where, j))...)
		}
	}
	return problems
}

// selectionProblems checks how a spec's hook resource names itself
// (unique among names) and selects pods.
func selectionProblems(where, name string, names map[string]bool, include, exclude []string, selector *metav1.LabelSelector) []string {
	var problems []string
	switch {
	case name == "":
		problems = append(problems, where+": name is required")
	case names[name]:
		problems = append(problems, fmt.Sprintf("%s: name %q is used twice", where, name))
	}
	names[name] = true
	if _, err := filter.NewGlobs(include, exclude); err != nil {
		problems = append(problems, fmt.Sprintf("%s: namespaces: %v", where, err))
	}
	if selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(selector); err != nil {
			problems = append(problems, fmt.Sprintf("%s: labelSelector: %v", where, err))
		}
	}
	return problems
}

// HookPhase is when a backup hook runs.
type HookPhase string

const (
	HookPre  HookPhase = "pre"
	HookPost HookPhase = "post"
)

// PodHook is one hook resolved for one pod: its container is set, and
// Problem says why it cannot run (a malformed annotation, a container the
// pod does not have), in which case it fails without running.
type PodHook struct {
	// Source is the annotation prefix or "spec hook <name>".
	Source    string        `json:"source"`
	Container string        `json:"container"`
	Command   []string      `json:"command"`
	OnError   HookOnError   `json:"onError"`
	Timeout   time.Duration `json:"timeout"`
	Problem   string        `json:"problem,omitempty"`
}

// HookedPod is a pod of the backup with hooks, and the claims of its
// volumes the backup snapshots.
type HookedPod struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Claims    []string  `json:"claims,omitempty"` // Volume.Key()s
	Pre       []PodHook `json:"pre,omitempty"`
	Post      []PodHook `json:"post,omitempty"`
}

// Key is "namespace/name".
func (p HookedPod) Key() string { return p.Namespace + "/" + p.Name }

// PlanHooksInput asks for the pods of a planned backup that have hooks.
type PlanHooksInput struct {
	Backup   string   `json:"backup"`
	Location string   `json:"location"`
	Volumes  []Volume `json:"volumes,omitempty"`
	// ActingAs is whom the hooks run as (nil: the worker): their exec
	// needs that identity's pods/exec.
	ActingAs *Identity `json:"actingAs,omitempty"`
}

// PlanHooksResult lists the pods with hooks, by namespace and name.
type PlanHooksResult struct {
	Pods []HookedPod `json:"pods"`
	// Warnings are pods whose hooks do not run (a pod that is not
	// running), one line each.
	Warnings []string `json:"warnings,omitempty"`
}

// RunHooksInput runs the hooks of one phase of one pod, in order.
type RunHooksInput struct {
	Backup    string    `json:"backup"`
	Location  string    `json:"location"`
	Namespace string    `json:"namespace"`
	Pod       string    `json:"pod"`
	Phase     HookPhase `json:"phase"`
	Hooks     []PodHook `json:"hooks"`
	// ActingAs is whom the hooks run as (nil: the worker): their exec
	// needs that identity's pods/exec.
	ActingAs *Identity `json:"actingAs,omitempty"`
}

// HookResult is what one hook did. A backup's status lists them.
type HookResult struct {
	Pod       string      `json:"pod"` // namespace/name
	Phase     HookPhase   `json:"phase"`
	Source    string      `json:"source"`
	Container string      `json:"container"`
	Command   []string    `json:"command"`
	OnError   HookOnError `json:"onError"`
	// ExitCode is the command's (-1: it did not run, or did not end).
	ExitCode int           `json:"exitCode"`
	Duration time.Duration `json:"duration"`
	// Stdout and Stderr are the last HookOutputTail bytes of each.
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// Error is why the hook failed; empty if it succeeded.
	Error string `json:"error,omitempty"`
	// Attempt is the activity attempt that ran it: above 1, a worker
	// died or the API server failed while it ran, and it ran again.
	Attempt int32 `json:"attempt"`
}

// HookOutputTail bounds the output of a hook a backup keeps.
const HookOutputTail = 2048

// Failed reports whether the hook failed.
func (r HookResult) Failed() bool { return r.Error != "" }

// RunHooksResult lists the results of the hooks run, in order. A pre
// hook that failed with onError Fail stops the rest, and is last.
type RunHooksResult struct {
	Results []HookResult `json:"results"`
}
