// Command incluster asks the API server who it is, with the in-cluster
// config client-go builds in a pod (KUBERNETES_SERVICE_HOST, the service
// account's token and CA). The sandbox's tests run it in pods.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "incluster:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("self subject review at %s: %w", cfg.Host, err)
	}
	fmt.Printf("host=%s user=%s\n", cfg.Host, review.Status.UserInfo.Username)
	return nil
}
