// Package hookspec finds the backup hooks of a pod: from its annotations,
// under Velero's names or cairn's, or else from the backup spec's hook
// resources that select it.
package hookspec

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// AnnotationDomains are where a pod's hook annotations live, in order of
// precedence: "<phase>.hook.backup.<domain>/<key>".
var AnnotationDomains = []string{"cairn.io", "velero.io"}

// The keys of a hook annotation.
const (
	keyContainer = "container"
	keyCommand   = "command"
	keyOnError   = "on-error"
	keyTimeout   = "timeout"
)

// ForPod returns the pre and post hooks of a pod. For each phase, the
// pod's annotations win; without them, every spec hook resource that
// selects the pod contributes its hooks, in spec order. A hook that
// cannot run carries its Problem.
func ForPod(pod *corev1.Pod, spec *v1alpha1.BackupHooks) (pre, post []v1alpha1.PodHook) {
	return forPhase(pod, spec, v1alpha1.HookPre), forPhase(pod, spec, v1alpha1.HookPost)
}

func forPhase(pod *corev1.Pod, spec *v1alpha1.BackupHooks, phase v1alpha1.HookPhase) []v1alpha1.PodHook {
	if h, ok := fromAnnotations(pod, phase); ok {
		return []v1alpha1.PodHook{h}
	}
	if spec == nil {
		return nil
	}
	var out []v1alpha1.PodHook
	for _, r := range spec.Resources {
		if !selects(r, pod) {
			continue
		}
		hooks := r.Pre
		if phase == v1alpha1.HookPost {
			hooks = r.Post
		}
		for _, h := range hooks {
			if h.Exec == nil {
				continue // refused by the spec's validation
			}
			out = append(out, resolve(pod, v1alpha1.PodHook{
				Source: "spec hook " + r.Name, Container: h.Exec.Container, Command: h.Exec.Command,
				OnError: h.Exec.OnError, Timeout: timeoutOf(h.Exec.Timeout),
			}))
		}
	}
	return out
}

func selects(r v1alpha1.BackupResourceHook, pod *corev1.Pod) bool {
	return selectsIn(r.IncludedNamespaces, r.ExcludedNamespaces, r.LabelSelector, pod.Namespace, pod.Labels)
}

func timeoutOf(d *metav1.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return v1alpha1.DefaultHookTimeout
	}
	return d.Duration
}

// fromAnnotations reads the pod's hook of a phase from the first domain
// that has any of its keys.
func fromAnnotations(pod *corev1.Pod, phase v1alpha1.HookPhase) (v1alpha1.PodHook, bool) {
	for _, domain := range AnnotationDomains {
		prefix := fmt.Sprintf("%s.hook.backup.%s/", phase, domain)
		values := map[string]string{}
		for _, key := range []string{keyContainer, keyCommand, keyOnError, keyTimeout} {
			if v, ok := pod.Annotations[prefix+key]; ok {
				values[key] = v
			}
		}
		if len(values) == 0 {
			continue
		}
		return resolve(pod, parseAnnotations(prefix, values)), true
	}
	return v1alpha1.PodHook{}, false
}

// parseAnnotations makes a hook of the annotation values under prefix; the
// first malformed one is its Problem.
func parseAnnotations(prefix string, values map[string]string) v1alpha1.PodHook {
	h := v1alpha1.PodHook{Source: prefix, Container: values[keyContainer], OnError: v1alpha1.HookOnError(values[keyOnError]),
		Timeout: v1alpha1.DefaultHookTimeout}
	var problems []string
	command, problem := parseCommand(prefix, values[keyCommand])
	if problem != "" {
		problems = append(problems, problem)
	}
	h.Command = command
	switch h.OnError {
	case v1alpha1.HookFail, v1alpha1.HookContinue:
	case "":
		h.OnError = v1alpha1.HookFail
	default:
		problems = append(problems, fmt.Sprintf("annotation %s%s %q must be Fail or Continue", prefix, keyOnError, h.OnError))
		h.OnError = v1alpha1.HookFail
	}
	if t, ok := values[keyTimeout]; ok {
		d, err := time.ParseDuration(t)
		if err != nil || d < 0 {
			problems = append(problems, fmt.Sprintf("annotation %s%s %q is not a duration such as 30s or 5m", prefix, keyTimeout, t))
		} else if d > 0 {
			h.Timeout = d
		}
	}
	h.Problem = strings.Join(problems, "; ")
	return h
}

// parseCommand reads a command annotation: a JSON array of strings, or
// one string that is the whole command (as Velero reads it).
func parseCommand(prefix, command string) ([]string, string) {
	switch {
	case strings.TrimSpace(command) == "":
		return nil, fmt.Sprintf("annotation %s%s is missing or empty", prefix, keyCommand)
	case strings.HasPrefix(strings.TrimSpace(command), "["):
		var args []string
		if err := json.Unmarshal([]byte(command), &args); err != nil || len(args) == 0 {
			return nil, fmt.Sprintf("annotation %s%s %q is not a JSON array of strings", prefix, keyCommand, command)
		}
		return args, ""
	default:
		return []string{command}, ""
	}
}

// resolve defaults the container to the pod's first and checks that the
// pod has it.
func resolve(pod *corev1.Pod, h v1alpha1.PodHook) v1alpha1.PodHook {
	if h.OnError == "" {
		h.OnError = v1alpha1.HookFail
	}
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	if h.Container == "" && len(names) > 0 {
		h.Container = names[0]
	}
	found := false
	for _, n := range names {
		found = found || n == h.Container
	}
	if !found && h.Problem == "" {
		h.Problem = fmt.Sprintf("pod %s/%s has no container %q (it has %s)", pod.Namespace, pod.Name, h.Container,
			strings.Join(names, ", "))
	}
	return h
}
