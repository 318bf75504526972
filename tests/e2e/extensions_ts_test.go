package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// tsExtension is the TypeScript example extension as `make test` builds
// it (examples/extensions/registry-rewriter, npm ci and tsc, in .cache).
func tsExtension(t *testing.T) string {
	t.Helper()
	main := os.Getenv("CAIRN_TS_EXTENSION")
	if main == "" {
		main = filepath.Join("..", "..", ".cache", "ts-extension", "dist", "main.js")
	}
	_, err := os.Stat(main)
	require.NoError(t, err, "the TypeScript extension is not built: `make test` builds it")
	return main
}

// TestTypeScriptRestoreExtension: an extension written in TypeScript with
// Temporal's TypeScript SDK, in a node process of its own, moves a
// Deployment's images to another registry as a restore creates it.
func TestTypeScriptRestoreExtension(t *testing.T) {
	t.Parallel()
	main := tsExtension(t)
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node runs the TypeScript extension")
	s := newSharedStack(t)
	ctx := context.Background()
	s.startWorker("--extensions", extensionsFile(t, `apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: registry-rewriter
  taskQueue: e2e-ts-registry
  timeout: 2m
  restore: {resources: [deployments.apps], includedNamespaces: [ext-ts-target]}
`))
	startBinary(t, "registry-rewriter", node, nil, main, "--address", s.temporalAddr, "--task-queue", "e2e-ts-registry",
		"--from", "docker.io/", "--to", "registry.local/")

	kc := fastClient(t, s.cluster.Config())
	makeWebDeployment(t, kc, "ext-ts", corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "docker.io/library/busybox:1.37"}},
		Containers:     []corev1.Container{{Name: "web", Image: "docker.io/library/nginx:1.27"}, {Name: "side", Image: "quay.io/x/y:1"}},
	})
	s.backup(v1alpha1.BackupSpec{Name: "ext-ts-1", IncludedNamespaces: []string{"ext-ts"}})

	v := s.restore(starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "ext-ts-r1", BackupName: "ext-ts-1",
		NamespaceMapping: map[string]string{"ext-ts": "ext-ts-target"}}}, 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	dep, err := kc.AppsV1().Deployments("ext-ts-target").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	spec := dep.Spec.Template.Spec
	assert.Equal(t, "registry.local/library/busybox:1.37", spec.InitContainers[0].Image)
	assert.Equal(t, "registry.local/library/nginx:1.27", spec.Containers[0].Image)
	assert.Equal(t, "quay.io/x/y:1", spec.Containers[1].Image, "an image of another registry stays")
}
