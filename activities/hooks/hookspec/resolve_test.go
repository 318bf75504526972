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

func pod(annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "shop", Labels: map[string]string{"app": "db"}, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db"}, {Name: "sidecar"}}},
	}
}

func TestVeleroAnnotations(t *testing.T) {
	pre, post := ForPod(pod(map[string]string{
		"pre.hook.backup.velero.io/container":  "sidecar",
		"pre.hook.backup.velero.io/command":    `["/bin/sh", "-c", "sync"]`,
		"pre.hook.backup.velero.io/on-error":   "Continue",
		"pre.hook.backup.velero.io/timeout":    "2m",
		"post.hook.backup.velero.io/command":   "/unfreeze",
		"post.hook.restore.velero.io/command":  "ignored here",
		"unrelated.example.com/command":        "ignored",
		"pre.hook.backup.velero.io/unknownkey": "ignored",
	}), nil)
	require.Len(t, pre, 1)
	assert.Equal(t, v1alpha1.PodHook{Source: "pre.hook.backup.velero.io/", Container: "sidecar", Command: []string{"/bin/sh", "-c", "sync"},
		OnError: v1alpha1.HookContinue, Timeout: 2 * time.Minute}, pre[0])
	require.Len(t, post, 1)
	assert.Equal(t, v1alpha1.PodHook{Source: "post.hook.backup.velero.io/", Container: "db", Command: []string{"/unfreeze"},
		OnError: v1alpha1.HookFail, Timeout: v1alpha1.DefaultHookTimeout}, post[0], "a plain string is one argument; defaults apply")
}

func TestCairnAnnotationsWinOverVelero(t *testing.T) {
	pre, _ := ForPod(pod(map[string]string{
		"pre.hook.backup.velero.io/command": "/velero",
		"pre.hook.backup.cairn.io/command":  "/cairn",
	}), nil)
	require.Len(t, pre, 1)
	assert.Equal(t, []string{"/cairn"}, pre[0].Command)
}

func TestMalformedAnnotationsAreProblems(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations map[string]string
		problem     string
	}{
		"bad JSON":         {map[string]string{"pre.hook.backup.velero.io/command": `["sync"`}, "is not a JSON array of strings"},
		"empty array":      {map[string]string{"pre.hook.backup.velero.io/command": `[]`}, "is not a JSON array of strings"},
		"no command":       {map[string]string{"pre.hook.backup.velero.io/container": "db"}, "command is missing or empty"},
		"unknown on-error": {map[string]string{"pre.hook.backup.velero.io/command": "x", "pre.hook.backup.velero.io/on-error": "Ignore"}, `"Ignore" must be Fail or Continue`},
		"bad timeout":      {map[string]string{"pre.hook.backup.velero.io/command": "x", "pre.hook.backup.velero.io/timeout": "soon"}, "is not a duration"},
		"no such container": {map[string]string{"pre.hook.backup.velero.io/command": "x", "pre.hook.backup.velero.io/container": "web"},
			`pod shop/db-0 has no container "web" (it has db, sidecar)`},
	} {
		t.Run(name, func(t *testing.T) {
			pre, _ := ForPod(pod(tc.annotations), nil)
			require.Len(t, pre, 1)
			assert.Contains(t, pre[0].Problem, tc.problem)
		})
	}
}

func TestSpecHooksSelectPods(t *testing.T) {
	exec := func(cmd string) []v1alpha1.BackupHook {
		return []v1alpha1.BackupHook{{Exec: &v1alpha1.ExecHook{Command: []string{cmd}}}}
	}
	spec := &v1alpha1.BackupHooks{Resources: []v1alpha1.BackupResourceHook{
		{Name: "all", Pre: exec("/all")},
		{Name: "db", IncludedNamespaces: []string{"sh*"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Pre: exec("/db-pre"), Post: exec("/db-post")},
		{Name: "other-ns", IncludedNamespaces: []string{"other"}, Pre: exec("/other")},
		{Name: "excluded", ExcludedNamespaces: []string{"shop"}, Pre: exec("/excluded")},
		{Name: "web", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Pre: exec("/web")},
	}}
	pre, post := ForPod(pod(nil), spec)
	var cmds []string
	for _, h := range pre {
		cmds = append(cmds, h.Command[0])
		assert.Equal(t, "db", h.Container)
		assert.Equal(t, v1alpha1.HookFail, h.OnError)
		assert.Empty(t, h.Problem)
	}
	assert.Equal(t, []string{"/all", "/db-pre"}, cmds)
	require.Len(t, post, 1)
	assert.Equal(t, "spec hook db", post[0].Source)

	pre, _ = ForPod(pod(map[string]string{"pre.hook.backup.velero.io/command": "/annotated"}), spec)
	require.Len(t, pre, 1, "annotations take precedence over the spec")
	assert.Equal(t, []string{"/annotated"}, pre[0].Command)
}
