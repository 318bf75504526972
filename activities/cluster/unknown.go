package cluster

import (
	"context"

	"github.com/cairn-backup/cairn/internal/kube"
)

// UnknownResources returns the filter entries that name no resource type
// the cluster serves (globs are never unknown).
func (a *Activities) UnknownResources(ctx context.Context, patterns []string) ([]string, error) {
	resources, _, err := kube.Discover(a.Clients.Discovery)
	if err != nil {
		return nil, err
	}
	return kube.UnknownResources(resources, patterns), nil
}
