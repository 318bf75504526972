package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestWholeClusterBackupListsAHugeTypeByNamespace: in a whole-cluster
// backup, a type the plan estimates large enough for its count to make a
// cluster-wide list slow is listed namespace by namespace, and every
// object is in the backup once.
func TestWholeClusterBackupListsAHugeTypeByNamespace(t *testing.T) {
	t.Parallel()
	// Its own cluster: the backup reads every namespace.
	s := newStack(t)
	s.startWorker()
	// 6,000 ConfigMaps over a handful of namespaces is past the break-even
	// of ListsByNamespace (about 5,000 for 6 namespaces, 5,700 for 8).
	want := seedConfigMaps(t, s.cluster.Config(), "huge", 2, 3000)

	s.backup(v1alpha1.BackupSpec{Name: "everything"})
	lines := logLines(t, s, "everything", "Listing namespace by namespace")
	require.Len(t, lines, 1, "one type is large enough")
	assert.Equal(t, "configmaps", lines[0]["resource"])
	assert.GreaterOrEqual(t, lines[0]["estimate"], float64(len(want)))

	stored := tarballCounts(t, s, "everything")["configmaps"]
	for key := range want {
		assert.Equal(t, 1, stored[key], "%s stored once", key)
	}
	assert.Equal(t, 1, stored["kube-system/extension-apiserver-authentication"], "the other namespaces are listed too")
}
