package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/webhook"
)

// tenancy decides whom a resource's run acts as, and what it may reach.
// A resource in cairn's own namespace acts as the worker: only operators
// may write there, and cluster-wide runs live there. Anywhere else a
// resource acts as its creator, whom cairn's admission webhook recorded,
// and reaches its own namespace only. Without a webhook in front of its
// creation the record could be its creator's own writing, so the
// controller refuses the resource rather than let a namespace's users
// borrow the worker's rights, or anyone else's.
type tenancy struct {
	namespace string
	// webhookConfiguration names the MutatingWebhookConfiguration of
	// cairn's webhook; empty, no resource outside namespace runs.
	webhookConfiguration string
	propagation          time.Duration
	// reader reads the configuration as it is now, not from a cache.
	reader client.Reader
}

// namespaceScoped is a resource whose run, outside cairn's namespace,
// stays inside its own.
type namespaceScoped interface {
	metav1.Object
	NamespaceScopeProblems() []string
}

// actingAs returns the identity obj's run acts as (nil: the worker), or
// why it may not run; an error is worth a retry.
func (t tenancy) actingAs(ctx context.Context, obj namespaceScoped) (*v1alpha1.Identity, string, error) {
	if !t.isTeams(obj) {
		return nil, "", nil
	}
	if problems := obj.NamespaceScopeProblems(); len(problems) > 0 {
		return nil, "refused: " + strings.Join(problems, "; "), nil
	}
	if t.webhookConfiguration == "" {
		return nil, fmt.Sprintf("refused: outside namespace %s a resource acts as its creator, whom cairn's admission "+
			"webhook records, and this cairn runs none; create it in %s, or use the starter API", t.namespace, t.namespace), nil
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	err := t.reader.Get(ctx, client.ObjectKey{Name: t.webhookConfiguration}, cfg)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("refused: MutatingWebhookConfiguration %s, which puts cairn's admission webhook "+
			"in front of its resources, does not exist", t.webhookConfiguration), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read MutatingWebhookConfiguration %s: %w", t.webhookConfiguration, err)
	}
	if err := webhook.InForce(cfg, obj.GetCreationTimestamp().Time, t.propagation); err != nil {
		return nil, "refused: " + err.Error(), nil
	}
	id, err := v1alpha1.ParseIdentityAnnotation(obj.GetAnnotations()[v1alpha1.AnnotationActingAs])
	if err != nil {
		return nil, "refused: " + err.Error(), nil
	}
	return id, "", nil
}

// isTeams: obj is outside cairn's namespace, a team's.
func (t tenancy) isTeams(obj metav1.Object) bool {
	return obj.GetNamespace() != t.namespace
}

// runName is the name of obj's run in cairn: its own in cairn's
// namespace, <namespace>.<name> in any other.
func (t tenancy) runName(obj metav1.Object) string {
	if !t.isTeams(obj) {
		return obj.GetName()
	}
	return v1alpha1.NamespacedRunName(obj.GetNamespace(), obj.GetName())
}

// runContext is ctx for the starter calls of obj's run: acting as id,
// and for a team's resource serving its namespace.
func (t tenancy) runContext(ctx context.Context, obj metav1.Object, id *v1alpha1.Identity) context.Context {
	ctx = starter.WithActingAs(ctx, id)
	if t.isTeams(obj) {
		ctx = starter.WithNamespace(ctx, obj.GetNamespace())
	}
	return ctx
}
