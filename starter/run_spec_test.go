package starter_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/devserver/devservertest"
	"github.com/cairn-backup/cairn/starter"
)

// TestViewOfAnUncommittedRunHasItsSpec: a backup that is still running (no
// worker here picks it up) and one that ended without committing
// (terminated) show the spec they were started with, read from Temporal;
// before, only a committed backup.json gave a view its spec.
func TestViewOfAnUncommittedRunHasItsSpec(t *testing.T) {
	c, tc := devservertest.StarterClient(t)
	ctx := context.Background()

	for _, name := range []string{"running", "terminated"} {
		_, err := c.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{
			Name: name, IncludedNamespaces: []string{"shop"}, ExcludedResources: []string{"secrets"}}})
		require.NoError(t, err)
	}
	require.NoError(t, tc.TerminateWorkflow(ctx, v1alpha1.BackupWorkflowID("terminated"), "", "test"))

	// With no worker the status query gives up after StatusQueryTimeout;
	// the spec does not depend on it.
	for name, phase := range map[string]v1alpha1.Phase{"running": v1alpha1.PhaseNew, "terminated": v1alpha1.PhaseFailed} {
		v, err := c.GetBackup(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, phase, v.Phase, name)
		require.NotNil(t, v.Spec, "%s: the view has the spec the run started with", name)
		assert.Equal(t, name, v.Spec.Name)
		assert.Equal(t, []string{"shop"}, v.Spec.IncludedNamespaces)
		assert.Equal(t, []string{"secrets"}, v.Spec.ExcludedResources)
	}

	list, err := c.ListBackups(ctx)
	require.NoError(t, err)
	found := false
	for _, v := range list.Items {
		if v.Name == "running" {
			found = true
			require.NotNil(t, v.Spec, "the listed running backup has its spec")
			assert.Equal(t, []string{"shop"}, v.Spec.IncludedNamespaces)
		}
	}
	assert.True(t, found, "the running backup is listed")
}
