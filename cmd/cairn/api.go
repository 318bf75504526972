package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/starter"
	"github.com/cairn-backup/cairn/starter/httpapi"
)

// apiServeFlags are how the starter API is served: cairn api's and cairn
// dev's.
type apiServeFlags struct {
	anonymousPaths    []string
	controller        controllerFlags
	tlsCertFile       string
	tlsKeyFile        string
	allowPlainHTTP    bool
	allowLocationURLs bool
}

func (a *apiServeFlags) register(fl *pflag.FlagSet, prefix string) {
	fl.StringSliceVar(&a.anonymousPaths, prefix+"anonymous-paths", []string{"/healthz"},
		"paths served without a token, among /healthz, /metrics, /openapi.json (empty: none)")
	a.controller.register(fl)
	fl.BoolVar(&a.allowLocationURLs, prefix+"allow-location-urls", false, "let requests give any location URL instead of a location's name: "+
		"whoever may start a backup could then copy what it reads to a bucket of theirs")
}

func (a *apiServeFlags) validate() error {
	for _, p := range a.anonymousPaths {
		if !slices.Contains(httpapi.AnonymousPathChoices, p) {
			return &usageError{fmt.Errorf("anonymous path %q: only %v may be served without a token", p, httpapi.AnonymousPathChoices)}
		}
	}
	if (a.tlsCertFile == "") != (a.tlsKeyFile == "") {
		return &usageError{errors.New("--tls-cert-file and --tls-private-key-file go together")}
	}
	return a.controller.webhook.validate()
}

func newAPICommand(g *globals) *cobra.Command {
	var listen string
	var printOpenAPI bool
	var audiences []string
	af := &apiServeFlags{}
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Serve the HTTP starter API against an existing Temporal cluster",
		Long: `Serves the HTTP starter API: start, inspect, cancel and delete backups,
restores, schedules and etcd snapshots, plus /metrics and /healthz.

Every request needs a bearer token the cluster of --kubeconfig accepts
(TokenReview: 'kubectl create token', OIDC tokens; --token-audiences
makes the API accept only tokens minted for it), and its user must be
allowed what it asks by the cluster's RBAC (SubjectAccessReview) on
resources backups, restores, schedules and etcdsnapshots of API group
cairn.io. A backup or restore is authorized per namespace it names; see
docs/security.md for a Role that lets a team restore into
its own namespace only. The API's own identity needs the ClusterRole
system:auth-delegator.

Every run a request starts acts as the request's caller: the worker
reads and writes the cluster with Kubernetes impersonation, so the
caller's own RBAC decides what a backup reads and a restore writes (the
worker's identity needs the verb impersonate on users, groups,
serviceaccounts, uids and userextras).

--tls-cert-file and --tls-private-key-file serve HTTPS; plain HTTP is
refused off loopback unless --allow-plain-http says a proxy in front
terminates TLS.

Requests name their location: "default" (--location) or one of
--location-name's (NAME=URL, or NAME=URL;readonly for one that is only
restored from). A URL in a request is refused (400) unless
--allow-location-urls: whoever may start a backup could otherwise copy
what the worker reads to a bucket of theirs, or point the worker at any
address.

It also runs the controller of Backup, Restore and Schedule resources
(cairn.io/v1alpha1; --no-controller turns it off). Those of
--controller-namespace act as the worker; those of any other namespace act
as their creator and stay in their namespace, which needs the admission
webhook: --webhook-address serves it over TLS (--webhook-tls-cert-file,
--webhook-tls-private-key-file), and --webhook-configuration names the
MutatingWebhookConfiguration the controller checks is in front of them
(failurePolicy Fail, no selectors). The Helm chart sets all of this up.

GET /openapi.json describes every route, its body and its answers as an
OpenAPI 3 document; --print-openapi prints it without a server, e.g. to
generate a client. Errors are JSON with a type; statuses are 400 (invalid),
401 (no or bad token), 403 (not allowed), 404, 409 (conflict), 503
(Temporal unreachable).`,
		Example: `  cairn api --listen 0.0.0.0:8443 --tls-cert-file tls.crt --tls-private-key-file tls.key
  TOKEN=$(kubectl create token ci -n shop)
  curl -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"name":"shop-1","includedNamespaces":["shop"]}' https://cairn.example:8443/v1/backups
  cairn api --print-openapi > cairn-openapi.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printOpenAPI {
				doc, err := httpapi.OpenAPI()
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), string(doc))
				return err
			}
			if err := af.validate(); err != nil {
				return err
			}
			af.controller.namespace = g.controllerNamespace
			log, err := g.logger()
			if err != nil {
				return err
			}
			kcfg, err := kube.LoadConfig(g.kubeconfig)
			if err != nil {
				return fmt.Errorf("the API authenticates callers with the cluster: %w", err)
			}
			kc, err := kubernetes.NewForConfig(kcfg)
			if err != nil {
				return fmt.Errorf("kubernetes client: %w", err)
			}
			catalog, err := g.catalog(af.allowLocationURLs)
			if err != nil {
				return err
			}
			sc, tc, err := g.starterClientWith(catalog)
			if err != nil {
				return err
			}
			defer tc.Close()
			grp, ctx := errgroup.WithContext(cmd.Context())
			grp.Go(func() error { return runController(ctx, &af.controller, kcfg, sc, log) })
			grp.Go(func() error { return serveWebhook(ctx, &af.controller.webhook, af.controller.namespace, log) })
			grp.Go(func() error {
				return serveAPI(ctx, listen, sc, log, httpapi.KubernetesAuth(kc, af.anonymousPaths, audiences...), af)
			})
			return grp.Wait()
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address of the HTTP starter API")
	cmd.Flags().BoolVar(&printOpenAPI, "print-openapi", false, "print the API's OpenAPI 3 document and exit")
	cmd.Flags().StringVar(&af.tlsCertFile, "tls-cert-file", "", "serve HTTPS with this certificate (PEM, chain included)")
	cmd.Flags().StringVar(&af.tlsKeyFile, "tls-private-key-file", "", "private key of --tls-cert-file")
	cmd.Flags().StringSliceVar(&audiences, "token-audiences", nil, "accept only tokens meant for one of these audiences "+
		"(e.g. 'kubectl create token SA --audience cairn'); empty: the API server's own")
	cmd.Flags().BoolVar(&af.allowPlainHTTP, "allow-plain-http", false, "serve plain HTTP off loopback (TLS ends at a proxy in front)")
	af.register(cmd.Flags(), "")
	return cmd
}

// newAPIServer bounds what one client may hold of the API: headers
// (size and time), the whole request, an answer (log streams lift their
// own write deadline), and an idle connection. Bodies are bounded by the
// handler.
func newAPIServer(handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// serveAPI serves the starter API on addr until ctx ends.
func serveAPI(ctx context.Context, addr string, sc *starter.Client, log *zap.Logger, auth httpapi.Auth, af *apiServeFlags) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("starter API: %w", err)
	}
	auth.HomeNamespace = af.controller.namespace
	handler := httpapi.Handler(sc, log, auth)
	tcp, _ := ln.Addr().(*net.TCPAddr)
	loopback := tcp != nil && tcp.IP.IsLoopback()
	if loopback {
		handler = httpapi.LoopbackHostsOnly(handler)
	}
	tls := af.tlsCertFile != ""
	if !tls && !loopback && !af.allowPlainHTTP {
		_ = ln.Close()
		return &usageError{fmt.Errorf("starter API on %s: bearer tokens would cross the network in the clear; "+
			"give --tls-cert-file and --tls-private-key-file, or --allow-plain-http when a proxy terminates TLS", addr)}
	}
	srv := newAPIServer(handler)
	scheme := "http"
	if tls {
		scheme = "https"
	}
	log.Info("Starter API listening", zap.String("address", scheme+"://"+ln.Addr().String()), zap.Strings("anonymousPaths", auth.AnonymousPaths))
	errc := make(chan error, 1)
	go func() {
		if tls {
			errc <- srv.ServeTLS(ln, af.tlsCertFile, af.tlsKeyFile)
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("starter API: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stop starter API: %w", err)
	}
	return nil
}
