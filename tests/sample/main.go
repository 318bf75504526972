// Command sample seeds the sample application into a cluster:
//
//	go run ./tests/sample --kubeconfig .cairn/sandbox/kubeconfig --namespace shop
//
// With --csi-state-dir (the sandbox's CSI driver directory) its claim is of
// the sandbox's CSI class and gets some files, so a backup has volume data
// to snapshot and move. With --writer-pod as well, a pod on the sandbox's
// node writes them through the claim.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/dev/sample"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/csistate"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/kube"
)

func main() {
	// A flag set of its own: client-go's packages register -kubeconfig on
	// the global one.
	fs := flag.NewFlagSet("sample", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster")
	ns := fs.String("namespace", "shop", "namespace to create the application in")
	csiStateDir := fs.String("csi-state-dir", "", "the sandbox CSI driver's directory: the claim gets its class and sample files")
	writerPod := fs.Bool("writer-pod", false, "with --csi-state-dir, a pod mounting the claim writes the files (the sandbox's node runs it)")
	_ = fs.Parse(os.Args[1:])
	cfg, err := kube.LoadConfig(*kubeconfig)
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	class := ""
	if *csiStateDir != "" {
		class = sandbox.CSIStorageClass
	}
	n, err := sample.SeedWithClaimClass(ctx, cfg, *ns, class)
	if err != nil {
		fail(fmt.Errorf("seed sample application: %w", err))
	}
	fmt.Printf("Sample application in namespace %q: %d objects.\n", *ns, n)
	if *csiStateDir == "" {
		return
	}
	dir, err := claimDir(ctx, cfg, *ns, "shop-data", *csiStateDir)
	if err != nil {
		fail(err)
	}
	if *writerPod {
		if err := writeThroughPod(ctx, cfg, *ns, "shop-data"); err != nil {
			fail(err)
		}
		bytes, err := datatree.Bytes(dir)
		if err != nil {
			fail(err)
		}
		fmt.Printf("Claim %s/shop-data holds %d bytes of sample files, written by pod %s/shop-writer.\n", *ns, bytes, *ns)
		return
	}
	bytes, err := datatree.Write(dir, datatree.Spec{LargeFiles: 2, LargeSize: 4 << 20, SmallFiles: 200, SmallSize: 4096, Seed: 1})
	if err != nil {
		fail(fmt.Errorf("write sample files: %w", err))
	}
	fmt.Printf("Claim %s/shop-data holds %d bytes of sample files.\n", *ns, bytes)
}

// claimDir waits for the claim to bind and returns its volume's directory
// in the sandbox driver's state.
func claimDir(ctx context.Context, cfg *rest.Config, ns, claim, stateDir string) (string, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	var volume string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := kc.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		volume = c.Spec.VolumeName
		return volume != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("claim %s/%s not bound: %w", ns, claim, err)
	}
	pv, err := kc.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pv.Spec.CSI == nil {
		return "", fmt.Errorf("volume %s is not a CSI volume", volume)
	}
	return csistate.VolumeDirForHandle(stateDir, pv.Spec.CSI.VolumeHandle), nil
}

// writerScript writes what datatree would: two 4 MiB files and 200 small
// ones, of random bytes.
const writerScript = `set -e
mkdir -p /data/large /data/small
for i in 1 2; do dd if=/dev/urandom of=/data/large/file-$i bs=1048576 count=4 2>/dev/null; done
i=0; while [ $i -lt 200 ]; do dd if=/dev/urandom of=/data/small/file-$i bs=4096 count=1 2>/dev/null; i=$((i+1)); done
sync`

// writeThroughPod runs a pod that writes the sample files into claim, and
// waits until it has succeeded.
func writeThroughPod(ctx context.Context, cfg *rest.Config, ns, claim string) error {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shop-writer", Namespace: ns, Labels: map[string]string{"app": "shop-writer"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "writer", Image: sandbox.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", writerScript}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
	if _, err := kc.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create writer pod: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := kc.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("writer pod failed: %s", p.Status.Message)
		}
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	if err != nil {
		return fmt.Errorf("writer pod %s/%s: %w", ns, pod.Name, err)
	}
	// It is done: the backup need not carry it.
	return kc.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
