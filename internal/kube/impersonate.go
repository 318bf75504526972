package kube

import (
	"fmt"

	"k8s.io/client-go/rest"
)

// Impersonation is whom requests are sent as: Kubernetes impersonation
// headers on every request, so the API server authorizes and admits
// them as that user. A zero UserName means no impersonation.
type Impersonation = rest.ImpersonationConfig

// As returns clients that send every request as imp, sharing this
// config's connection settings; without a user it returns c itself.
// The identity c authenticates as needs `impersonate` on users, groups,
// uids and userextras (service accounts are users to the API server).
func (c *Clients) As(imp Impersonation) (*Clients, error) {
	if imp.UserName == "" {
		if imp.UID != "" || len(imp.Groups) > 0 || len(imp.Extra) > 0 {
			// Not "nobody": dropping the rest would act as the worker.
			return nil, fmt.Errorf("impersonation without a user name (uid %q, groups %v)", imp.UID, imp.Groups)
		}
		return c, nil
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = imp
	as, err := NewClients(cfg)
	if err != nil {
		return nil, fmt.Errorf("clients impersonating %s: %w", imp.UserName, err)
	}
	return as, nil
}
