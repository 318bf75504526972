package v1alpha1

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBackupSpecRefusesBadHooks: every problem of a spec's hooks is
// listed before the backup starts.
func TestBackupSpecRefusesBadHooks(t *testing.T) {
	good := []BackupHook{{Exec: &ExecHook{Command: []string{"/sync"}}}}
	spec := BackupSpec{Name: "b", Hooks: &BackupHooks{Resources: []BackupResourceHook{
		{Name: "ok", Pre: good},
		{Name: "ok", Post: good},
		{Name: "", Pre: good},
		{Name: "empty"},
		{Name: "bad", IncludedNamespaces: []string{"[a"}, LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Sometimes"}}},
			Pre: []BackupHook{{}, {Exec: &ExecHook{OnError: "Ignore", Timeout: &metav1.Duration{Duration: -1}}}}},
	}}}
	err := spec.Validate()
	var invalid *InvalidSpecError
	require.True(t, errors.As(err, &invalid), "%v", err)
	for _, want := range []string{
		`hooks.resources[1]: name "ok" is used twice`,
		"hooks.resources[2]: name is required",
		"hooks.resources[3]: has neither pre nor post hooks",
		"hooks.resources[4]: namespaces:",
		"hooks.resources[4]: labelSelector:",
		"hooks.resources[4].pre[0]: exec is required",
		"hooks.resources[4].pre[1]: exec.command is required",
		`hooks.resources[4].pre[1]: exec.onError "Ignore" must be Fail or Continue`,
		"hooks.resources[4].pre[1]: exec.timeout -1ns must not be negative",
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NoError(t, BackupSpec{Name: "b", Hooks: &BackupHooks{Resources: []BackupResourceHook{{Name: "ok", Pre: good}}}}.Validate())
}

// TestRestoreSpecRefusesBadHooks: every problem of a restore spec's hooks
// is listed before the restore starts.
func TestRestoreSpecRefusesBadHooks(t *testing.T) {
	spec := RestoreSpec{Name: "r", BackupName: "b", Hooks: &RestoreHooks{Resources: []RestoreResourceHook{
		{Name: "none"},
		{Name: "both", PostHooks: []RestoreHook{{Init: &InitRestoreHook{}, Exec: &ExecRestoreHook{}}}},
		{Name: "bad", PostHooks: []RestoreHook{
			{Init: &InitRestoreHook{InitContainers: []corev1.Container{{Name: "x"}}}},
			{Exec: &ExecRestoreHook{OnError: "Later", WaitTimeout: &metav1.Duration{Duration: -1}}},
		}},
	}}}
	err := spec.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"hooks.resources[0]: has no postHooks",
		"hooks.resources[1].postHooks[0]: exactly one of init and exec is required",
		"hooks.resources[2].postHooks[0]: init.initContainers[0] needs a name and an image",
		"hooks.resources[2].postHooks[1]: exec.command is required",
		`hooks.resources[2].postHooks[1]: exec.onError "Later" must be Fail or Continue`,
		"hooks.resources[2].postHooks[1]: exec.waitTimeout -1ns must not be negative",
	} {
		assert.Contains(t, err.Error(), want)
	}
}
