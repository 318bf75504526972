package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/starter"
)

// runResource is a Backup or a Restore: a resource whose status follows
// one run.
type runResource interface {
	client.Object
	RunStatus() *v1alpha1.ResourceStatus
}

// resourceTarget is where a create goes as a resource: the cluster of the
// kubeconfig, which serves cairn's resources, and a namespace of it.
type resourceTarget struct {
	kube      client.Client
	namespace string
}

// resourceTarget decides where a create of plural (backups, restores)
// goes: nil when its run starts directly, as it did before the resources
// existed: with --direct or --server, or when no kubeconfig is found, or
// its cluster does not serve the kind. Without -n the resource goes into
// --controller-namespace, where runs are the cluster's.
func (g *globals) resourceTarget(ctx context.Context, direct bool, plural string) (*resourceTarget, error) {
	if direct || g.server != "" {
		return nil, nil
	}
	cfg, err := kube.LoadConfig(g.kubeconfig)
	if err != nil && g.kubeconfig == "" {
		return nil, nil
	}
	if err != nil {
		return nil, &usageError{fmt.Errorf("--kubeconfig: %w", err)}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, &usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	served, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ask the cluster at %s whether it serves %s resources (--direct starts the run through Temporal instead): %w",
			cfg.Host, v1alpha1.APIGroup, err)
	}
	if !slices.ContainsFunc(served.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
		return nil, nil
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	kc, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	ns := g.namespace
	if ns == "" {
		ns = g.controllerNamespace
	}
	return &resourceTarget{kube: kc, namespace: ns}, nil
}

// create creates obj in the target's namespace. The same name with the
// same spec again is the existing resource (created false); with another
// spec it is a conflict, as for a run started directly.
func (t *resourceTarget) create(ctx context.Context, obj runResource) (bool, error) {
	obj.SetNamespace(t.namespace)
	err := t.kube.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		asked := obj.DeepCopyObject()
		if err := t.kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, kubeError(err)
		}
		if same, err := sameSpec(asked, obj); err != nil || !same {
			return false, &starter.ConflictError{Message: fmt.Sprintf("%s %s/%s exists with another spec; delete it first, or choose another name",
				kindOf(obj), t.namespace, obj.GetName())}
		}
		return false, nil
	}
	return err == nil, kubeError(err)
}

// sameSpec compares the specs of two resources of one kind.
func sameSpec(a, b runtime.Object) (bool, error) {
	ua, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		return false, err
	}
	ub, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		return false, err
	}
	return equality.Semantic.DeepEqual(ua["spec"], ub["spec"]), nil
}

// kubeError makes what the API server answered an error of the kind the
// CLI's exit codes know: a spec the schema refuses is invalid (2), what
// RBAC or cairn's admission webhook refuses is denied (7).
func kubeError(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		problems := []string{err.Error()}
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
			problems = problems[:0]
			for _, c := range status.Status().Details.Causes {
				problems = append(problems, strings.TrimSpace(c.Field+": "+c.Message))
			}
		}
		return &starter.InvalidError{Problems: problems}
	case apierrors.IsForbidden(err):
		return &starter.ForbiddenError{Message: err.Error()}
	case apierrors.IsUnauthorized(err):
		return &starter.UnauthenticatedError{Message: err.Error()}
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %w", starter.ErrNotFound, err)
	}
	return err
}

func kindOf(obj runResource) string {
	switch obj.(type) {
	case *v1alpha1.Backup:
		return "Backup"
	case *v1alpha1.Restore:
		return "Restore"
	}
	return fmt.Sprintf("%T", obj)
}

// report prints what create did; with --wait, it follows the resource's
// status until its run ends and maps the phase to the exit code.
func (t *resourceTarget) report(cmd *cobra.Command, obj runResource, created, wait bool, out *outputFlag) error {
	kind := kindOf(obj)
	if !wait || out.format == "table" {
		w := cmd.OutOrStdout()
		if wait {
			w = cmd.ErrOrStderr()
		}
		if created {
			fmt.Fprintf(w, "%s %s/%s created; cairn's controller starts its run.\n", kind, t.namespace, obj.GetName())
		} else {
			fmt.Fprintf(w, "%s %s/%s already exists with the same spec; nothing new started.\n", kind, t.namespace, obj.GetName())
		}
		if !wait {
			fmt.Fprintf(w, "  Follow it: kubectl get %s %s -n %s -w\n", strings.ToLower(kind), obj.GetName(), t.namespace)
			return nil
		}
	}
	if !wait {
		return out.print(cmd.OutOrStdout(), printable(obj), nil)
	}
	if err := t.follow(cmd.Context(), obj, cmd.ErrOrStderr()); err != nil {
		return err
	}
	s := obj.RunStatus()
	printable(obj)
	if err := out.print(cmd.OutOrStdout(), obj, func(w io.Writer) { describeResourceStatus(w, kind, t.namespace, obj.GetName(), s) }); err != nil {
		return err
	}
	switch s.Phase {
	case v1alpha1.PhaseCompleted:
		return nil
	case v1alpha1.PhasePartiallyFailed:
		return &exitError{code: starter.ExitPartiallyFailed}
	}
	return &exitError{code: starter.ExitFailed}
}

// printable is obj as kubectl prints it: with its kind, without the
// bookkeeping of server-side apply.
func printable(obj runResource) runResource {
	obj.GetObjectKind().SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kindOf(obj)))
	obj.SetManagedFields(nil)
	return obj
}

// follow reads obj again every second, printing each change of its
// status, until its run has ended.
func (t *resourceTarget) follow(ctx context.Context, obj runResource, progress io.Writer) error {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	last := ""
	for {
		if err := t.kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return kubeError(err)
		}
		s := obj.RunStatus()
		if line := statusLine(s); line != last {
			fmt.Fprintln(progress, line)
			last = line
		}
		if s.Phase.Done() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting; the run goes on (kubectl get %s %s -n %s): %w",
				strings.ToLower(kindOf(obj)), obj.GetName(), t.namespace, ctx.Err())
		case <-ticker.C:
		}
	}
}

// statusLine is one line of a resource's status while it is followed.
func statusLine(s *v1alpha1.ResourceStatus) string {
	switch {
	case s.Phase == "":
		return "Waiting for cairn's controller to start the run"
	case !s.Phase.Done():
		return fmt.Sprintf("%s: run %s, acting as %s", s.Phase, s.RunName, orWorker(s.ActingAs))
	case s.Message != "":
		return fmt.Sprintf("%s: %s", s.Phase, s.Message)
	}
	return fmt.Sprintf("%s: %d items, %d errors, %d warnings", s.Phase, s.Items, s.Errors, s.Warnings)
}

func orWorker(actingAs string) string {
	if actingAs == "" {
		return "the worker"
	}
	return actingAs
}

func describeResourceStatus(w io.Writer, kind, ns, name string, s *v1alpha1.ResourceStatus) {
	fmt.Fprintf(w, "%s %s/%s: %s\n", kind, ns, name, s.Phase)
	fmt.Fprintf(w, "  Run:       %s\n", s.RunName)
	fmt.Fprintf(w, "  Acting as: %s\n", orWorker(s.ActingAs))
	fmt.Fprintf(w, "  Items:     %d (%d errors, %d warnings)\n", s.Items, s.Errors, s.Warnings)
	if s.Message != "" {
		fmt.Fprintf(w, "  Message:   %s\n", s.Message)
	}
	if s.RunName != "" {
		fmt.Fprintf(w, "  More:      cairn %s describe %s\n", strings.ToLower(kind), s.RunName)
	}
}

// createAsResource creates obj, whose run a create command asked for, as
// a resource where the cluster serves its kind (plural), and reports it.
// handled is false when the run is to start directly instead. options
// are the run's options from the flags: a resource has none, so setting
// any needs --direct.
func createAsResource(cmd *cobra.Command, g *globals, direct bool, plural string, obj runResource, options any, wait bool, out *outputFlag) (handled bool, err error) {
	target, err := g.resourceTarget(cmd.Context(), direct, plural)
	if err != nil || target == nil {
		return err != nil, err
	}
	if set := setFields(options); len(set) > 0 {
		return true, &usageError{fmt.Errorf("options %s are a run's, not part of a %s resource: add --direct to start the run "+
			"with them through Temporal", strings.Join(set, ", "), kindOf(obj))}
	}
	created, err := target.create(cmd.Context(), obj)
	if err != nil {
		return true, err
	}
	return true, target.report(cmd, obj, created, wait, out)
}

// setFields names the JSON fields of v that differ from its zero value.
func setFields(v any) []string {
	set, _ := json.Marshal(v)
	zero, _ := json.Marshal(reflect.New(reflect.TypeOf(v)).Elem().Interface())
	var a, b map[string]any
	_ = json.Unmarshal(set, &a)
	_ = json.Unmarshal(zero, &b)
	var names []string
	for k, av := range a {
		if !reflect.DeepEqual(av, b[k]) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}
