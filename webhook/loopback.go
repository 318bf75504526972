package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	admissionclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"

	"github.com/cairn-backup/cairn/internal/pki"
)

// Loopback puts the webhook in front of a cluster whose API server runs
// on this machine (the sandbox, tests): it listens on a loopback port
// with a certificate made for it and writes configuration name (or
// rewrites the one a crashed run left). The returned func serves until
// ctx ends, then removes the configuration before it stops answering:
// left behind with failurePolicy Fail, it would refuse every create of
// cairn's resources.
func Loopback(ctx context.Context, kc kubernetes.Interface, name, namespace string, log *zap.Logger) (func(context.Context) error, error) {
	ca, err := pki.NewCA("cairn webhook CA")
	if err != nil {
		return nil, err
	}
	pair, err := ca.Issue(pki.Leaf{CommonName: "cairn webhook", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
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
	url := "https://" + ln.Addr().String() + Path
	configs := kc.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if err := apply(ctx, configs, Configuration(name, admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca.CertPEM})); err != nil {
		return nil, errors.Join(err, ln.Close())
	}
	return func(ctx context.Context) error {
		serving, stop := context.WithCancel(context.Background())
		defer stop()
		errc := make(chan error, 1)
		go func() { errc <- Serve(serving, ln, cert, namespace, log) }()
		select {
		case err := <-errc:
			return errors.Join(err, remove(configs, name))
		case <-ctx.Done():
		}
		removed := remove(configs, name)
		stop()
		return errors.Join(<-errc, removed)
	}, nil
}

func apply(ctx context.Context, configs admissionclient.MutatingWebhookConfigurationInterface, want *admissionregistrationv1.MutatingWebhookConfiguration) error {
	_, err := configs.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var have *admissionregistrationv1.MutatingWebhookConfiguration
		if have, err = configs.Get(ctx, want.Name, metav1.GetOptions{}); err == nil {
			have.Webhooks = want.Webhooks
			_, err = configs.Update(ctx, have, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("MutatingWebhookConfiguration %s: %w", want.Name, err)
	}
	return nil
}

func remove(configs admissionclient.MutatingWebhookConfigurationInterface, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := configs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove MutatingWebhookConfiguration %s: %w", name, err)
	}
	return nil
}
