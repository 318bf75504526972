package kube

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
)

// ServerVersion asks the API server for its version. Unlike
// discovery's own ServerVersion, a refusal keeps the server's reason
// ("cannot impersonate ...") instead of reading "unknown".
func ServerVersion(ctx context.Context, d discovery.DiscoveryInterface) (*version.Info, error) {
	res := d.RESTClient().Get().AbsPath("/version").Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	body, _ := res.Raw()
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("decode server version: %w", err)
	}
	return &info, nil
}
