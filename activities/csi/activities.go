// Package csi holds the activities of a backup's volume snapshots: which
// claims to snapshot (plan), create a VolumeSnapshot, wait until it is
// ready, remove one that did not make it, keep the newest N per volume,
// store the final snapshots as backup items, and delete a backup's
// snapshots with it.
package csi

import (
	"fmt"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v6/clientset/versioned"
	"go.uber.org/zap"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
)

// Activities holds the clients and settings the volume activities share.
type Activities struct {
	// Config is the worker's own; a run's caller is impersonated from it.
	Config    *rest.Config
	Kube      kubernetes.Interface
	Snapshots snapclient.Interface
	Discovery discovery.DiscoveryInterface
	Log       *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener
	Retention Retention
	// PollInterval is how often a wait reads a snapshot's status.
	PollInterval time.Duration
	// Dynamic reads the ConfigMaps of ConfigNamespace, the worker's
	// namespace, which may hold a backup's volume policies.
	Dynamic         dynamic.Interface
	ConfigNamespace string
}

// Retention is how many native snapshots per volume keep-newest mode
// keeps: KeepNewest, or the override of the volume's CSI driver.
type Retention struct {
	KeepNewest int
	ByDriver   map[string]int
}

// DefaultKeepNewest is KeepNewest when not set.
const DefaultKeepNewest = 3

// For returns N for a driver.
func (r Retention) For(driver string) int {
	if n, ok := r.ByDriver[driver]; ok && n > 0 {
		return n
	}
	if r.KeepNewest > 0 {
		return r.KeepNewest
	}
	return DefaultKeepNewest
}

// New returns the activities for the cluster of clients, sharing their
// configuration and discovery.
func New(clients *kube.Clients, log *zap.Logger, retention Retention) (*Activities, error) {
	kc, err := kubernetes.NewForConfig(clients.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	sc, err := snapclient.NewForConfig(clients.Config)
	if err != nil {
		return nil, fmt.Errorf("snapshot client: %w", err)
	}
	return &Activities{Config: clients.Config, Kube: kc, Snapshots: sc, Discovery: clients.Discovery, Log: log, Retention: retention,
		PollInterval: time.Second, Dynamic: clients.Dynamic}, nil
}
