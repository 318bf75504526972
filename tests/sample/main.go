// Command sample seeds the sample application into a cluster:
//
//	go run ./tests/sample --kubeconfig .cairn/sandbox/kubeconfig --namespace shop
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/sample"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	ns := flag.String("namespace", "shop", "namespace to create the application in")
	flag.Parse()
	cfg, err := kube.LoadConfig(*kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := sample.Seed(ctx, cfg, *ns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seed sample application:", err)
		os.Exit(1)
	}
	fmt.Printf("Sample application in namespace %q: %d objects.\n", *ns, n)
}
