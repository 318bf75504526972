package hookspec

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/filter"
)

// The keys of restore hook annotations, "<kind>.hook.restore.<domain>/<key>".
const (
	keyContainerImage = "container-image"
	keyContainerName  = "container-name"
	keyExecTimeout    = "exec-timeout"
	keyWaitTimeout    = "wait-timeout"
	keyWaitForReady   = "wait-for-ready"
)

// defaultInitContainerName names an annotated init hook without a name.
const defaultInitContainerName = "restore-hook"

// InitContainers returns the init containers a restore adds to a pod,
// before the pod's own: from its annotations, or else from the spec's
// hook resources that select it (by its backed-up namespace). A malformed
// annotation adds nothing and is a problem.
func InitContainers(pod *corev1.Pod, sourceNamespace string, spec *v1alpha1.RestoreHooks) ([]corev1.Container, []string) {
	for _, domain := range AnnotationDomains {
		prefix := "init.hook.restore." + domain + "/"
		image, hasImage := pod.Annotations[prefix+keyContainerImage]
		command, hasCommand := pod.Annotations[prefix+keyCommand]
		name := pod.Annotations[prefix+keyContainerName]
		if !hasImage && !hasCommand && name == "" {
			continue
		}
		where := fmt.Sprintf("pod %s/%s: ", sourceNamespace, pod.Name)
		if image == "" {
			return nil, []string{where + "annotation " + prefix + keyContainerImage + " is missing or empty: no init container added"}
		}
		c := corev1.Container{Name: name, Image: image}
		if c.Name == "" {
			c.Name = defaultInitContainerName
		}
		if hasCommand {
			args, problem := parseCommand(prefix, command)
			if problem != "" {
				return nil, []string{where + problem + ": no init container added"}
			}
			c.Command = args
		}
		return []corev1.Container{c}, nil
	}
	var out []corev1.Container
	for _, r := range selectingRestoreHooks(spec, pod, sourceNamespace) {
		for _, h := range r.PostHooks {
			if h.Init != nil {
				out = append(out, h.Init.InitContainers...)
			}
		}
	}
	return out, nil
}

// RestoreExecHooks returns a restored pod's post-restore exec hooks: from
// its annotations, or else from the spec's hook resources that select it.
func RestoreExecHooks(pod *corev1.Pod, sourceNamespace string, spec *v1alpha1.RestoreHooks) []v1alpha1.RestoreExecHook {
	for _, domain := range AnnotationDomains {
		prefix := "post.hook.restore." + domain + "/"
		values := map[string]string{}
		for _, key := range []string{keyContainer, keyCommand, keyOnError, keyExecTimeout, keyWaitTimeout, keyWaitForReady} {
			if v, ok := pod.Annotations[prefix+key]; ok {
				values[key] = v
			}
		}
		if len(values) == 0 {
			continue
		}
		return []v1alpha1.RestoreExecHook{resolveRestore(pod, parseRestoreAnnotations(prefix, values))}
	}
	var out []v1alpha1.RestoreExecHook
	for _, r := range selectingRestoreHooks(spec, pod, sourceNamespace) {
		for _, h := range r.PostHooks {
			e := h.Exec
			if e == nil {
				continue
			}
			out = append(out, resolveRestore(pod, v1alpha1.RestoreExecHook{
				PodHook: v1alpha1.PodHook{Source: "spec hook " + r.Name, Container: e.Container, Command: e.Command, OnError: e.OnError,
					Timeout: durationOr(e.ExecTimeout, v1alpha1.DefaultRestoreExecTimeout)},
				WaitTimeout: durationOr(e.WaitTimeout, v1alpha1.DefaultRestoreWaitTimeout), WaitForReady: e.WaitForReady,
			}))
		}
	}
	return out
}

func resolveRestore(pod *corev1.Pod, h v1alpha1.RestoreExecHook) v1alpha1.RestoreExecHook {
	h.PodHook = resolve(pod, h.PodHook)
	return h
}

func selectingRestoreHooks(spec *v1alpha1.RestoreHooks, pod *corev1.Pod, sourceNamespace string) []v1alpha1.RestoreResourceHook {
	if spec == nil {
		return nil
	}
	var out []v1alpha1.RestoreResourceHook
	for _, r := range spec.Resources {
		if selectsIn(r.IncludedNamespaces, r.ExcludedNamespaces, r.LabelSelector, sourceNamespace, pod.Labels) {
			out = append(out, r)
		}
	}
	return out
}

// selectsIn reports whether namespace globs and a label selector select
// an object of namespace ns with labels set.
func selectsIn(include, exclude []string, selector *metav1.LabelSelector, ns string, set map[string]string) bool {
	globs, err := filter.NewGlobs(include, exclude)
	if err != nil || !globs.Match(ns) {
		return false
	}
	if selector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	return err == nil && sel.Matches(labels.Set(set))
}

func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil || d.Duration <= 0 {
		return def
	}
	return d.Duration
}

// parseRestoreAnnotations makes a post-restore exec hook of the
// annotation values under prefix; what is malformed is its Problem.
func parseRestoreAnnotations(prefix string, values map[string]string) v1alpha1.RestoreExecHook {
	common := map[string]string{}
	for _, key := range []string{keyContainer, keyCommand, keyOnError} {
		if v, ok := values[key]; ok {
			common[key] = v
		}
	}
	h := v1alpha1.RestoreExecHook{PodHook: parseAnnotations(prefix, common), WaitTimeout: v1alpha1.DefaultRestoreWaitTimeout}
	h.Timeout = v1alpha1.DefaultRestoreExecTimeout
	var problems []string
	if h.Problem != "" {
		problems = append(problems, h.Problem)
	}
	for _, key := range []string{keyExecTimeout, keyWaitTimeout} {
		v, ok := values[key]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil || d < 0:
			problems = append(problems, fmt.Sprintf("annotation %s%s %q is not a duration such as 30s or 5m", prefix, key, v))
		case d > 0 && key == keyExecTimeout:
			h.Timeout = d
		case d > 0:
			h.WaitTimeout = d
		}
	}
	if v, ok := values[keyWaitForReady]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("annotation %s%s %q must be true or false", prefix, keyWaitForReady, v))
		}
		h.WaitForReady = b
	}
	h.Problem = strings.Join(problems, "; ")
	return h
}
