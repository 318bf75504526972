package hookspec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func TestRestoreAnnotations(t *testing.T) {
	p := pod(map[string]string{
		"init.hook.restore.velero.io/container-image": "busybox",
		"init.hook.restore.velero.io/command":         `["/bin/sh", "-c", "echo init"]`,
		"post.hook.restore.velero.io/container":       "sidecar",
		"post.hook.restore.velero.io/command":         `["/bin/sh", "-c", "echo restored"]`,
		"post.hook.restore.velero.io/exec-timeout":    "1m",
		"post.hook.restore.velero.io/wait-timeout":    "3m",
		"post.hook.restore.velero.io/wait-for-ready":  "true",
		"post.hook.restore.velero.io/on-error":        "Continue",
	})
	inits, problems := InitContainers(p, "shop", nil)
	assert.Empty(t, problems)
	assert.Equal(t, []corev1.Container{{Name: "restore-hook", Image: "busybox", Command: []string{"/bin/sh", "-c", "echo init"}}}, inits)

	execs := RestoreExecHooks(p, "shop", nil)
	require.Len(t, execs, 1)
	assert.Equal(t, v1alpha1.RestoreExecHook{
		PodHook: v1alpha1.PodHook{Source: "post.hook.restore.velero.io/", Container: "sidecar", Command: []string{"/bin/sh", "-c", "echo restored"},
			OnError: v1alpha1.HookContinue, Timeout: time.Minute},
		WaitTimeout: 3 * time.Minute, WaitForReady: true,
	}, execs[0])
}

func TestMalformedRestoreAnnotations(t *testing.T) {
	_, problems := InitContainers(pod(map[string]string{"init.hook.restore.velero.io/command": "x"}), "shop", nil)
	assert.Equal(t, []string{"pod shop/db-0: annotation init.hook.restore.velero.io/container-image is missing or empty: no init container added"}, problems)

	execs := RestoreExecHooks(pod(map[string]string{
		"post.hook.restore.velero.io/command":        "x",
		"post.hook.restore.velero.io/wait-timeout":   "forever",
		"post.hook.restore.velero.io/wait-for-ready": "sure",
	}), "shop", nil)
	require.Len(t, execs, 1)
	assert.Contains(t, execs[0].Problem, `wait-timeout "forever" is not a duration`)
	assert.Contains(t, execs[0].Problem, `wait-for-ready "sure" must be true or false`)
}

func TestRestoreSpecHooksSelectByBackedUpNamespace(t *testing.T) {
	spec := &v1alpha1.RestoreHooks{Resources: []v1alpha1.RestoreResourceHook{{
		Name: "db", IncludedNamespaces: []string{"shop"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		PostHooks: []v1alpha1.RestoreHook{
			{Init: &v1alpha1.InitRestoreHook{InitContainers: []corev1.Container{{Name: "warm", Image: "busybox"}}}},
			{Exec: &v1alpha1.ExecRestoreHook{Command: []string{"/check"}}},
		},
	}}}
	restored := pod(nil)
	restored.Namespace = "shop-copy"
	inits, _ := InitContainers(restored, "shop", spec)
	assert.Equal(t, []corev1.Container{{Name: "warm", Image: "busybox"}}, inits)
	execs := RestoreExecHooks(restored, "shop", spec)
	require.Len(t, execs, 1)
	assert.Equal(t, "db", execs[0].Container)
	assert.Equal(t, v1alpha1.DefaultRestoreExecTimeout, execs[0].Timeout)
	assert.Equal(t, v1alpha1.DefaultRestoreWaitTimeout, execs[0].WaitTimeout)
	assert.Empty(t, RestoreExecHooks(restored, "shop-copy", spec), "the backed-up namespace selects, not the restored one")
}
