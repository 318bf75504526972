// Package cluster holds the activities that talk to the Kubernetes API
// server during a backup: plan (discovery), collect (paged LIST of one
// resource type into parts) and collect-related (cluster-scoped objects
// the collected ones point to).
package cluster

import (
	"time"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
)

// Activities holds the clients the cluster activities share.
type Activities struct {
	Clients *kube.Clients
	Lister  kube.Lister
	Log     *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener
	// PageInterval is a pause after every LIST page, to spare a busy API
	// server at the cost of a longer backup (0: no pause).
	PageInterval time.Duration
	// Registered are the extensions a backup planned now calls; its plan
	// keeps them. Extensions makes the calls, Operations runs the
	// operations their answers start.
	Registered []v1alpha1.Extension
	Extensions extcall.Caller
	Operations extcall.Operator
	// callBeat is how often a step waiting on extensions heartbeats
	// (0: a third of its heartbeat timeout); tests shorten it.
	callBeat time.Duration
}

// New returns the activities for the cluster behind clients.
func New(clients *kube.Clients, log *zap.Logger) (*Activities, error) {
	lister, err := clients.Lister()
	if err != nil {
		return nil, err
	}
	return &Activities{Clients: clients, Lister: lister, Log: log}, nil
}
