// Package kube connects to a Kubernetes API server and answers the
// questions a backup asks of it: which resource types exist at which
// preferred version, which namespaces a filter selects.
package kube

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Clients are the API clients an activity needs.
type Clients struct {
	Config    *rest.Config
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	// raw sends requests whose answers are kept as the JSON that came;
	// clients made by hand (fakes in unit tests) have none.
	raw *rest.RESTClient
}

// LoadConfig loads a kubeconfig file, or the default loading rules
// ($KUBECONFIG, ~/.kube/config, in-cluster) when path is empty.
func LoadConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		if path == "" {
			if inCluster, ierr := rest.InClusterConfig(); ierr == nil {
				return inCluster, nil
			}
		}
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}

// NewClients builds clients from cfg, with client-side throttling raised to
// what a backup needs (client-go's default of 5 QPS would dominate).
func NewClients(cfg *rest.Config) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS = 100
		cfg.Burst = 200
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("HTTP client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	raw, err := rawClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Dynamic: dyn, Discovery: disc, raw: raw}, nil
}
