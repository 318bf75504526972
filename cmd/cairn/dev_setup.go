//go:build devserver

package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/webhook"
)

// ensureNamespace creates the controller's namespace in a sandbox, so the
// first Backup resource made there has somewhere to go.
func ensureNamespace(ctx context.Context, cfg *rest.Config, ns string) error {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	return nil
}

// ensureSecretFile creates a random secret at path (mode 0600) unless one
// is there: `cairn dev`'s repository password and API token.
func ensureSecretFile(path string) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(base64.RawURLEncoding.EncodeToString(buf)+"\n"), 0o600)
}

// devWebhookConfiguration is the name cairn dev --sandbox registers its
// webhook under.
const devWebhookConfiguration = "cairn-dev"

// serveDevWebhook serves the webhook of a sandbox on a loopback port and
// puts it in front of the sandbox's resources; it returns once the
// configuration is written.
func serveDevWebhook(ctx context.Context, cfg *rest.Config, namespace string, log *zap.Logger) (func(context.Context) error, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return webhook.Loopback(ctx, kc, devWebhookConfiguration, namespace, log.Named("webhook"))
}
