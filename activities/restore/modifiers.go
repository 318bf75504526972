package restore

import (
	"context"

	"github.com/cairn-backup/cairn/activities/internal/specdoc"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/resourcemodifiers"
)

// resourceModifiers loads the restore's resource modifiers, from its
// spec or from a ConfigMap in the worker's namespace, read with clients
// (the run's caller's: a ConfigMap the caller may not read is refused);
// nil when it has none. A document that is missing or invalid fails the
// restore before anything is created.
func (a *Activities) resourceModifiers(ctx context.Context, clients *kube.Clients, spec v1alpha1.RestoreSpec) (*resourcemodifiers.Rules, error) {
	return specdoc.Load(ctx, clients.Dynamic, a.ConfigNamespace, "resourceModifiers", spec.ResourceModifiers, resourcemodifiers.Parse)
}
