package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/webhook"
)

// webhookFlags say where cairn's admission webhook is served, and which
// configuration the controller checks is in front of resources.
type webhookFlags struct {
	address       string
	certFile      string
	keyFile       string
	configuration string
}

func (w *webhookFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&w.address, "webhook-address", "", "serve the admission webhook that records who creates Backup, Restore "+
		"and Schedule resources on this address, over TLS (empty: not served)")
	fl.StringVar(&w.certFile, "webhook-tls-cert-file", "", "certificate of the admission webhook (PEM; the API server must trust its CA)")
	fl.StringVar(&w.keyFile, "webhook-tls-private-key-file", "", "private key of --webhook-tls-cert-file")
	fl.StringVar(&w.configuration, "webhook-configuration", "", "the MutatingWebhookConfiguration that puts the webhook in front of "+
		"cairn's resources; resources outside --controller-namespace run only when it is in force (empty: they are refused)")
}

func (w *webhookFlags) validate() error {
	if w.address != "" && (w.certFile == "" || w.keyFile == "") {
		return &usageError{errors.New("--webhook-address needs --webhook-tls-cert-file and --webhook-tls-private-key-file: the API server calls webhooks over TLS only")}
	}
	return nil
}

// serveWebhook serves the admission webhook until ctx ends, when an
// address is given.
func serveWebhook(ctx context.Context, w *webhookFlags, namespace string, log *zap.Logger) error {
	if w.address == "" {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(w.certFile, w.keyFile)
	if err != nil {
		return fmt.Errorf("admission webhook certificate: %w", err)
	}
	ln, err := net.Listen("tcp", w.address)
	if err != nil {
		return fmt.Errorf("admission webhook: %w", err)
	}
	return webhook.Serve(ctx, ln, cert, namespace, log.Named("webhook"))
}
