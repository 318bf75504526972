package restore

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/resourcemodifiers"
	"github.com/cairn-backup/cairn/workflows"
)

// resourceModifiers loads the restore's resource modifiers, from its
// spec or from a ConfigMap in the worker's namespace; nil when it has
// none. A document that is missing or invalid fails the restore before
// anything is created.
func (a *Activities) resourceModifiers(ctx context.Context, spec workflows.RestoreSpec) (*resourcemodifiers.Rules, error) {
	ref := spec.ResourceModifiers
	if ref == nil {
		return nil, nil
	}
	data := []byte(ref.Inline)
	if ref.ConfigMap != "" {
		var err error
		data, err = kube.ConfigMapDocument(ctx, a.Clients.Dynamic, a.ConfigNamespace, ref.ConfigMap)
		if errors.Is(err, kube.ErrBadDocument) {
			return nil, temporal.NewNonRetryableApplicationError("resourceModifiers: "+err.Error(), workflows.ErrTypeInvalidSpec, err)
		}
		if err != nil {
			return nil, err
		}
	}
	rules, err := resourcemodifiers.Parse(data)
	if err != nil {
		msg := fmt.Sprintf("resourceModifiers (configmap %q): %v", ref.ConfigMap, err)
		return nil, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeInvalidSpec, err)
	}
	return rules, nil
}
