// Package specdoc loads the Velero-format documents a spec refers to
// (resource modifiers, volume policies): inline, or from a ConfigMap in
// the worker's namespace, read with the client it is given (the run's
// caller's, for a run through the API).
package specdoc

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
)

// Load reads the document ref gives and parses it; the zero T when ref is
// nil. A ConfigMap that is missing or holds no single document, and a
// document that does not parse, are non-retryable InvalidSpec errors
// that name field: no retry fixes them, so the run fails before it acts.
func Load[T any](ctx context.Context, d dynamic.Interface, namespace, field string, ref *v1alpha1.DocumentRef,
	parse func([]byte) (T, error)) (T, error) {
	var zero T
	if ref == nil {
		return zero, nil
	}
	data := []byte(ref.Inline)
	if ref.ConfigMap != "" {
		var err error
		data, err = kube.ConfigMapDocument(ctx, d, namespace, ref.ConfigMap)
		if errors.Is(err, kube.ErrBadDocument) {
			return zero, temporal.NewNonRetryableApplicationError(field+": "+err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
		}
		if apierrors.IsForbidden(err) {
			// Read as the run's caller, who may not read it: say only
			// that, never what it holds.
			msg := fmt.Sprintf("%s: configmap %q in namespace %s may not be read by the run's caller", field, ref.ConfigMap, namespace)
			return zero, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeForbidden, nil)
		}
		if err != nil {
			return zero, err
		}
	}
	doc, err := parse(data)
	if err != nil {
		msg := fmt.Sprintf("%s (configmap %q): %v", field, ref.ConfigMap, err)
		return zero, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeInvalidSpec, err)
	}
	return doc, nil
}
