package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// envRepositoryPassword carries the repository password. It is read from
// the environment only, never a flag, so it stays out of process lists.
const envRepositoryPassword = "CAIRN_REPOSITORY_PASSWORD"

// secretPasswordKey is the key of the password in its Secret.
const secretPasswordKey = "repository-password"

// repositoryFlags say where the kopia repository password comes from.
type repositoryFlags struct {
	passwordFile   string
	passwordSecret string
}

func (r *repositoryFlags) register(f *pflag.FlagSet, withSecret bool) {
	f.StringVar(&r.passwordFile, "repository-password-file", "",
		"file holding the password that encrypts volume data in the location's kopia repository (or set $"+envRepositoryPassword+")")
	if withSecret {
		f.StringVar(&r.passwordSecret, "repository-password-secret", "",
			"Secret in the data mover namespace whose key "+secretPasswordKey+" holds the repository password; data mover pods read it too")
	}
}

// password is $CAIRN_REPOSITORY_PASSWORD, else the file's first line,
// else "" (volume data movement then fails with a clear error).
func (r *repositoryFlags) password() (string, error) {
	if p := os.Getenv(envRepositoryPassword); p != "" {
		return p, nil
	}
	if r.passwordFile == "" {
		return "", nil
	}
	data, err := os.ReadFile(r.passwordFile)
	if err != nil {
		return "", &usageError{fmt.Errorf("--repository-password-file: %w", err)}
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

// secretPassword reads the password from the Secret in namespace.
func (r *repositoryFlags) secretPassword(ctx context.Context, kcfg *rest.Config, namespace string) (string, error) {
	kc, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return "", err
	}
	s, err := kc.CoreV1().Secrets(namespace).Get(ctx, r.passwordSecret, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("repository password Secret %s/%s: %w", namespace, r.passwordSecret, err)
	}
	p := strings.TrimRight(string(s.Data[secretPasswordKey]), "\r\n")
	if p == "" {
		return "", fmt.Errorf("repository password Secret %s/%s has no key %s", namespace, r.passwordSecret, secretPasswordKey)
	}
	return p, nil
}
