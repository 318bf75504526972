// Package hooks holds the activities of backup hooks: find the pods of a
// backup that have hooks, and run one pod's hooks of one phase in its
// containers through the API server.
package hooks

import (
	"fmt"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
)

// Activities holds the clients the hook activities share.
type Activities struct {
	Kube   kubernetes.Interface
	Config *rest.Config
	Log    *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener
	// HeartbeatInterval is how often a running hook heartbeats.
	HeartbeatInterval time.Duration
}

// New returns the hook activities for the cluster of clients.
func New(clients *kube.Clients, log *zap.Logger) (*Activities, error) {
	kc, err := kubernetes.NewForConfig(clients.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Activities{Kube: kc, Config: clients.Config, Log: log, HeartbeatInterval: 5 * time.Second}, nil
}
