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

	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
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
	// MaxTimeout bounds every hook's timeout and wait (0:
	// v1alpha1.DefaultMaxHookTimeout).
	MaxTimeout time.Duration
	// asCaller: the clients impersonate a run's caller, whose Forbidden
	// means pods it may not read (and so are not backed up), not the
	// worker's misconfiguration.
	asCaller bool
}

// bound caps d at the hooks' upper bound, and says whether it did.
func (a *Activities) bound(d time.Duration) (time.Duration, bool) {
	maxTimeout := a.MaxTimeout
	if maxTimeout <= 0 {
		maxTimeout = v1alpha1.DefaultMaxHookTimeout
	}
	if d > maxTimeout {
		return maxTimeout, true
	}
	return d, false
}

// boundHooks caps the hooks' timeouts, with a warning for each it cut.
func (a *Activities) boundHooks(pod string, hs []v1alpha1.PodHook) ([]v1alpha1.PodHook, []string) {
	var warnings []string
	for i := range hs {
		if d, cut := a.bound(hs[i].Timeout); cut {
			warnings = append(warnings, fmt.Sprintf("pod %s: hook %s asks for a timeout of %s; it runs with the limit of %s", pod, hs[i].Source, hs[i].Timeout, d))
			hs[i].Timeout = d
		}
	}
	return hs, warnings
}

// actingAs returns the activities with clients that send every request
// as id, so a hook's exec is the caller's to be allowed (pods/exec); a
// itself when id is nil.
func (a *Activities) actingAs(id *v1alpha1.Identity) (*Activities, error) {
	if id == nil {
		return a, nil
	}
	cfg, err := actas.Config(a.Config, id)
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client as %s: %w", id.Username, err)
	}
	as := *a
	as.Kube, as.Config, as.asCaller = kc, cfg, true
	return &as, nil
}

// New returns the hook activities for the cluster of clients.
func New(clients *kube.Clients, log *zap.Logger) (*Activities, error) {
	kc, err := kubernetes.NewForConfig(clients.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Activities{Kube: kc, Config: clients.Config, Log: log, HeartbeatInterval: 5 * time.Second}, nil
}
