package main

import (
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/starter/remote"
)

// remoteClient is the CLI's client of the starter API at --server. It
// authenticates as kubectl would: --token, or else the kubeconfig
// user's token (a token, a token file, or an exec or auth-provider
// plugin such as an OIDC login, refreshed as client-go does).
func (g *globals) remoteClient() (*remote.Client, error) {
	cfg := &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: g.serverCA}}
	if g.token != "" {
		cfg.BearerToken = g.token
	} else {
		kcfg, err := kube.LoadConfig(g.kubeconfig)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--server needs a token: --token, or a kubeconfig whose user has one: %w", err)}
		}
		if kcfg.BearerToken == "" && kcfg.BearerTokenFile == "" && kcfg.ExecProvider == nil && kcfg.AuthProvider == nil {
			return nil, &usageError{fmt.Errorf("--server needs a token, and the kubeconfig's user has none (a client certificate is not " +
				"one): pass --token, e.g. $(kubectl create token NAME)")}
		}
		cfg.BearerToken, cfg.BearerTokenFile = kcfg.BearerToken, kcfg.BearerTokenFile
		cfg.ExecProvider, cfg.AuthProvider, cfg.AuthConfigPersister = kcfg.ExecProvider, kcfg.AuthProvider, kcfg.AuthConfigPersister
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--server: %w", err)}
	}
	c, err := remote.New(g.server, hc)
	if err != nil {
		return nil, &usageError{err}
	}
	return c, nil
}
