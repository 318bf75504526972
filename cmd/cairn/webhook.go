package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/internal/pki"
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

// devWebhookConfiguration is the name cairn dev --sandbox registers its
// webhook under.
const devWebhookConfiguration = "cairn-dev"

// serveDevWebhook serves the webhook of a sandbox on a loopback port, with
// a certificate made for it, and puts it in front of the sandbox's
// resources; it returns once the configuration is written.
func serveDevWebhook(ctx context.Context, cfg *rest.Config, namespace string, log *zap.Logger) (func(context.Context) error, error) {
	ca, err := pki.NewCA("cairn dev webhook CA")
	if err != nil {
		return nil, err
	}
	pair, err := ca.Issue(pki.Leaf{CommonName: "cairn dev webhook", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("admission webhook: %w", err)
	}
	url := "https://" + ln.Addr().String() + webhook.Path
	if err := applyWebhookConfiguration(ctx, cfg, webhook.Configuration(devWebhookConfiguration,
		admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca.CertPEM})); err != nil {
		ln.Close()
		return nil, err
	}
	return func(ctx context.Context) error {
		err := webhook.Serve(ctx, ln, cert, namespace, log.Named("webhook"))
		// Left behind, it would refuse every create of cairn's resources
		// in the sandbox while no cairn dev answers it.
		cleanup, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if derr := deleteWebhookConfiguration(cleanup, cfg, devWebhookConfiguration); derr != nil {
			log.Warn("Sandbox webhook configuration left behind", zap.Error(derr))
		}
		return err
	}, nil
}

func deleteWebhookConfiguration(ctx context.Context, cfg *rest.Config, name string) error {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	err = kc.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete MutatingWebhookConfiguration %s: %w", name, err)
	}
	return nil
}

// applyWebhookConfiguration creates the configuration or updates the one
// an earlier run of the sandbox left.
func applyWebhookConfiguration(ctx context.Context, cfg *rest.Config, want *admissionregistrationv1.MutatingWebhookConfiguration) error {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := kc.AdmissionregistrationV1().MutatingWebhookConfigurations()
	_, err = api.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var have *admissionregistrationv1.MutatingWebhookConfiguration
		if have, err = api.Get(ctx, want.Name, metav1.GetOptions{}); err == nil {
			have.Webhooks = want.Webhooks
			_, err = api.Update(ctx, have, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("MutatingWebhookConfiguration %s: %w", want.Name, err)
	}
	return nil
}
