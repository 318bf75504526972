package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/cairn-backup/cairn/internal/filter"
)

// ExtensionsKind is the kind of the document that registers extensions.
const ExtensionsKind = "Extensions"

// ExtensionsFile is the document an operator registers extensions with
// (the worker's --extensions file, the chart's extensions value):
//
//	apiVersion: cairn.io/v1alpha1
//	kind: Extensions
//	extensions:
//	- name: widgets
//	  taskQueue: widgets-extension
//	  timeout: 10m
//	  backup:
//	    resources: [widgets.demo.cairn.io]
//	    includedNamespaces: [shop]
type ExtensionsFile struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Extensions []Extension `json:"extensions"`
}

// Extension is one registered extension: a Temporal worker on its own
// task queue that serves the activities of pkg/extension. A run's plan
// keeps the registrations it started with, so one run uses one set.
type Extension struct {
	Name      string `json:"name"`
	TaskQueue string `json:"taskQueue"`
	// Timeout bounds one call, waiting for a worker to poll included:
	// past it the call's items fail with the extension named.
	Timeout metav1.Duration `json:"timeout,omitempty"`
	// Backup selects the items of a backup the extension acts on,
	// Restore those of a restore (by the namespace they are restored
	// into), and Delete the items of a deleted backup it deletes for;
	// nil: none.
	Backup  *ExtensionSelector `json:"backup,omitempty"`
	Restore *ExtensionSelector `json:"restore,omitempty"`
	Delete  *ExtensionSelector `json:"delete,omitempty"`
}

// ExtensionSelector selects the items an extension is called for.
type ExtensionSelector struct {
	// Resources are group-qualified resource names ("configmaps",
	// "widgets.demo.cairn.io"), or "*" for every type but Secrets.
	Resources          []string `json:"resources"`
	IncludedNamespaces []string `json:"includedNamespaces,omitempty"`
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// LabelSelector in kubectl's syntax ("app=shop,tier!=cache").
	LabelSelector string `json:"labelSelector,omitempty"`
	// AllowSecrets lets the extension see Secrets: what it is sent
	// crosses Temporal and stays in its history, so a Secret is sent only
	// to an extension that says so, and only when named in Resources.
	AllowSecrets bool `json:"allowSecrets,omitempty"`
}

// Bounds of an extension's call timeout, and its default.
const (
	DefaultExtensionTimeout = 10 * time.Minute
	minExtensionTimeout     = time.Second
	maxExtensionTimeout     = 24 * time.Hour
)

// CallTimeout is the registration's timeout, or the default.
func (e Extension) CallTimeout() time.Duration {
	if e.Timeout.Duration <= 0 {
		return DefaultExtensionTimeout
	}
	return e.Timeout.Duration
}

// ParseExtensions reads and validates an extensions document; unknown
// fields are errors, so a misspelt selector never selects everything.
func ParseExtensions(data []byte) ([]Extension, error) {
	var f ExtensionsFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("extensions: %w", err)
	}
	if f.APIVersion != GroupVersion.String() || f.Kind != ExtensionsKind {
		return nil, fmt.Errorf("extensions: want apiVersion %s and kind %s, got %q and %q", GroupVersion, ExtensionsKind, f.APIVersion, f.Kind)
	}
	if err := ValidateExtensions(f.Extensions); err != nil {
		return nil, err
	}
	return f.Extensions, nil
}

// ValidateExtensions checks a set of registrations, naming every problem.
func ValidateExtensions(exts []Extension) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	seen := map[string]bool{}
	for i, e := range exts {
		at := fmt.Sprintf("extensions[%d]", i)
		if errs := validation.IsDNS1123Label(e.Name); len(errs) > 0 {
			add("%s.name %q: %s", at, e.Name, strings.Join(errs, ", "))
		}
		if seen[e.Name] {
			add("%s.name %q: registered twice", at, e.Name)
		}
		seen[e.Name] = true
		switch {
		case e.TaskQueue == "":
			add("%s.taskQueue: required", at)
		case e.TaskQueue == TaskQueue || strings.HasPrefix(e.TaskQueue, TaskQueue+"-"):
			add("%s.taskQueue %q: cairn's own queues are not an extension's", at, e.TaskQueue)
		}
		if d := e.Timeout.Duration; d != 0 && (d < minExtensionTimeout || d > maxExtensionTimeout) {
			add("%s.timeout %s: between %s and %s", at, d, minExtensionTimeout, maxExtensionTimeout)
		}
		if e.Backup == nil && e.Restore == nil && e.Delete == nil {
			add("%s: acts on nothing (backup, restore and delete are empty)", at)
			continue
		}
		for _, sel := range []struct {
			field string
			s     *ExtensionSelector
		}{{"backup", e.Backup}, {"restore", e.Restore}, {"delete", e.Delete}} {
			if sel.s == nil {
				continue
			}
			for _, p := range sel.s.problems() {
				add("%s.%s.%s", at, sel.field, p)
			}
		}
	}
	if len(problems) > 0 {
		return &InvalidSpecError{What: "extensions", Problems: problems}
	}
	return nil
}

func (s *ExtensionSelector) problems() []string {
	var out []string
	if len(s.Resources) == 0 {
		out = append(out, "resources: name at least one type, or *")
	}
	for _, r := range s.Resources {
		if r == "" || strings.ContainsAny(r, " /") {
			out = append(out, fmt.Sprintf("resources: %q is not a group-qualified resource", r))
		}
	}
	if _, err := filter.NewGlobs(s.IncludedNamespaces, s.ExcludedNamespaces); err != nil {
		out = append(out, "namespaces: "+err.Error())
	}
	if _, err := filter.NewLabels(s.LabelSelector, nil); err != nil {
		out = append(out, "labelSelector: "+err.Error())
	}
	return out
}

// SelectsType reports whether the selector may select items of the type
// groupResource ("configmaps", "widgets.demo.cairn.io").
func (s *ExtensionSelector) SelectsType(groupResource string) bool {
	if s == nil {
		return false
	}
	for _, r := range s.Resources {
		switch {
		case r == groupResource:
			return groupResource != "secrets" || s.AllowSecrets
		case r == "*" && groupResource != "secrets":
			return true
		}
	}
	return false
}

// ExtensionWait says that a step waits on an extension's answers, and
// since when: what a step's heartbeat carries, and a described backup
// shows.
type ExtensionWait struct {
	Extension string      `json:"extension"`
	TaskQueue string      `json:"taskQueue"`
	Since     metav1.Time `json:"since"`
	// Operation is the ID of the operation waited on; empty: a call.
	Operation string `json:"operation,omitempty"`
	// Ready names the object ("configmaps shop/web-config") a restored
	// item waits to be ready before it is created, as the extension's
	// answer asked; empty: not such a wait.
	Ready string `json:"ready,omitempty"`
}

// ExtensionCallInput is one call of an extension's activity, which a step
// starts and waits for as an activity of its own (a standalone activity;
// on a Temporal server without them, a small ExtensionCall workflow): the
// request and the answer live there, not in the run's history, which
// stays bounded by types however many items extensions see.
type ExtensionCallInput struct {
	Run       string `json:"run"`
	Extension string `json:"extension"`
	TaskQueue string `json:"taskQueue"`
	// Activity is the contract's activity name (pkg/extension).
	Activity string          `json:"activity"`
	Timeout  metav1.Duration `json:"timeout"`
	Request  json.RawMessage `json:"request"`
}

// ExtensionCallWorkflowID is the ID of one call: the run, the extension
// and where in the run (the step's own key, such as a collected page), so
// a retried step finds the call it made instead of making it again.
func ExtensionCallWorkflowID(run, extension, key string) string {
	return "extension/" + run + "/" + extension + "/" + key
}
