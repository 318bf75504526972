// Package actas gives activities the clients of whom a run acts as: the
// caller recorded by the starter API, impersonated, or the worker itself
// for a run started on Temporal's path.
package actas

import (
	"maps"

	"go.temporal.io/sdk/temporal"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
)

// Impersonation is the impersonation config of id (zero for nil: no
// impersonation, the worker's own identity).
func Impersonation(id *v1alpha1.Identity) kube.Impersonation {
	if id == nil {
		return kube.Impersonation{}
	}
	imp := kube.Impersonation{UserName: id.Username, UID: id.UID, Groups: id.Groups}
	if len(id.Extra) > 0 {
		imp.Extra = maps.Clone(id.Extra)
	}
	return imp
}

// Clients are base's clients sending every request as id; base itself
// when id is nil.
func Clients(base *kube.Clients, id *v1alpha1.Identity) (*kube.Clients, error) {
	if id != nil && id.Username == "" {
		return nil, noUsername()
	}
	return base.As(Impersonation(id))
}

// Config is base with every request sent as id; base itself when id is
// nil. An identity without a user name is refused, never dropped.
func Config(base *rest.Config, id *v1alpha1.Identity) (*rest.Config, error) {
	if id == nil {
		return base, nil
	}
	if id.Username == "" {
		return nil, noUsername()
	}
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = Impersonation(id)
	return cfg, nil
}

func noUsername() error {
	err := &v1alpha1.InvalidSpecError{What: "run", Problems: []string{"actingAs has no username"}}
	return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
}

// Lister is a raw lister of base's cluster sending every request as id;
// fallback when id is nil.
func Lister(base *kube.Clients, fallback kube.Lister, id *v1alpha1.Identity) (kube.Lister, error) {
	if id == nil {
		return fallback, nil
	}
	c, err := Clients(base, id)
	if err != nil {
		return nil, err
	}
	return c.Lister()
}
