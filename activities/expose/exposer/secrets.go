package exposer

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// PodSecrets are the Secrets data mover pods use besides the repository
// password: how they reach Temporal and the location.
type PodSecrets struct {
	// TemporalTLS (tls.crt, tls.key, ca.crt) is mounted at TemporalTLSDir,
	// where the worker's own --tls-* files are.
	TemporalTLS, TemporalTLSDir string
	// EncryptionKey (the worker's --encryption-key file) is mounted at
	// EncryptionKeyDir.
	EncryptionKey, EncryptionKeyDir string
	// APIKey holds the Temporal API key under APIKeyKey.
	APIKey, APIKeyKey string
	// Env are Secrets whose keys become the environment: the location's
	// credentials.
	Env []string
	// Mounts are Secrets mounted at a directory each (Secret name to
	// directory): named locations' own credentials.
	Mounts map[string]string
	// From is the namespace they are kept in (the worker's). Pods cannot
	// use another namespace's Secrets, so the worker copies them into the
	// data mover namespace before each pod starts, which also carries a
	// rotation over. Empty: they are in the data mover namespace already.
	From string
}

// Names are the Secrets' names, each once.
func (s PodSecrets) Names() []string {
	var names []string
	seen := map[string]bool{}
	all := append([]string{s.TemporalTLS, s.EncryptionKey, s.APIKey}, s.Env...)
	all = append(all, slices.Sorted(maps.Keys(s.Mounts))...)
	for _, n := range all {
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// copySecrets brings the pods' Secrets into namespace ns, as they are
// now in s.From. A Secret of the same name that cairn did not copy is
// the user's own and is left as it is.
func (p *Pod) copySecrets(ctx context.Context, ns string) error {
	s := p.Config.Secrets
	if s.From == "" || s.From == ns {
		return nil
	}
	for _, name := range s.Names() {
		src, err := p.Kube.CoreV1().Secrets(s.From).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("data mover Secret %s/%s: %w", s.From, name, err)
		}
		if err := p.copySecret(ctx, src, ns); err != nil {
			return fmt.Errorf("copy Secret %s/%s to namespace %s: %w", s.From, name, ns, err)
		}
	}
	return nil
}

func (p *Pod) copySecret(ctx context.Context, src *corev1.Secret, ns string) error {
	secrets := p.Kube.CoreV1().Secrets(ns)
	cur, err := secrets.Get(ctx, src.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: ns, Labels: map[string]string{v1alpha1.LabelCopiedFrom: src.Namespace}},
			Type:       src.Type, Data: src.Data,
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if cur.Labels[v1alpha1.LabelCopiedFrom] != src.Namespace || maps.EqualFunc(cur.Data, src.Data, bytes.Equal) {
		return nil
	}
	cur.Data = src.Data
	_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}
