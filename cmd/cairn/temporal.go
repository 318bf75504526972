package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/logging"
	"github.com/cairn-backup/cairn/starter"
)

// logger builds the process logger from the global flags.
func (g *globals) logger() (*zap.Logger, error) {
	log, err := logging.New(g.logLevel, g.logFormat)
	if err != nil {
		return nil, &usageError{err}
	}
	return log, nil
}

// dial connects to Temporal at --temporal-address with the TLS and API key
// flags. The SDK's own chatter goes to log at warn level and above.
func (g *globals) dial(log *zap.Logger) (client.Client, error) {
	opts := client.Options{
		HostPort:  g.temporalAddress,
		Namespace: g.temporalNamespace,
		Logger:    logging.NewTemporalLogger(log.WithOptions(zap.IncreaseLevel(zap.WarnLevel))),
	}
	tlsCfg, err := g.tlsConfig()
	if err != nil {
		return nil, err
	}
	opts.ConnectionOptions.TLS = tlsCfg
	if g.apiKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(g.apiKey)
		if opts.ConnectionOptions.TLS == nil {
			opts.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %s): %w", g.temporalAddress, g.temporalNamespace, err)
	}
	return c, nil
}

func (g *globals) tlsConfig() (*tls.Config, error) {
	if g.tlsCert == "" && g.tlsKey == "" && g.tlsCA == "" && g.tlsServerName == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: g.tlsServerName}
	if (g.tlsCert == "") != (g.tlsKey == "") {
		return nil, &usageError{fmt.Errorf("--tls-cert and --tls-key go together")}
	}
	if g.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(g.tlsCert, g.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("load Temporal client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if g.tlsCA != "" {
		pem, err := os.ReadFile(g.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("read --tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", g.tlsCA)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// starterClient is the CLI's way to cairn: the starter API at --server
// (its paths of -n's namespace, when given), or else Temporal, dialled and wrapped in the starter library, which
// takes any location URL (the CLI's user reaches Temporal directly). The
// caller calls the returned close when done.
func (g *globals) starterClient() (starter.Service, func(), error) {
	ns := g.namespace
	if ns == g.controllerNamespace {
		ns = "" // cairn's own namespace: the cluster's runs
	}
	if g.server != "" {
		c, err := g.remoteClient()
		if err != nil {
			return nil, nil, err
		}
		if ns != "" {
			c = c.InNamespace(ns)
		}
		return c, func() {}, nil
	}
	if ns != "" {
		return nil, nil, &usageError{fmt.Errorf("-n %s: a namespace's runs are reached through the API (--server) or, for a create, "+
			"as resources of a cluster that serves them; through Temporal, name its run in full: %s.NAME", ns, ns)}
	}
	sc, tc, err := g.starterClientWith(nil)
	if err != nil {
		return nil, nil, err
	}
	return sc, tc.Close, nil
}

// starterClientWith is starterClient limited to the locations of
// catalog, when not nil: the API's.
func (g *globals) starterClientWith(catalog *location.Catalog) (*starter.Client, client.Client, error) {
	log, err := g.logger()
	if err != nil {
		return nil, nil, err
	}
	loc, err := g.defaultLocation()
	if err != nil {
		return nil, nil, err
	}
	opener, err := g.opener()
	if err != nil {
		return nil, nil, err
	}
	tc, err := g.dial(log)
	if err != nil {
		return nil, nil, err
	}
	return starter.New(tc, starter.Options{Namespace: g.temporalNamespace, DefaultLocation: loc, Locations: catalog, Opener: opener, UIBaseURL: g.uiURL}), tc, nil
}
