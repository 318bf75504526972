package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cairn-backup/cairn/workflows"
)

// TestExclusionLabels: a ConfigMap labelled cairn.io/exclude-from-backup
// and a claim labelled velero.io/exclude-from-backup are left out of a
// backup that selects their namespace, the claim with its snapshot, and
// the results name both with the label; their neighbours are backed up.
func TestExclusionLabels(t *testing.T) {
	s := newCSIStack(t)
	s.startWorker()
	ctx := context.Background()
	kc := fastClient(t, s.cluster.Config())
	makeClaims(t, s, "excl", "data", "scratch")
	_, err := kc.CoreV1().PersistentVolumeClaims("excl").Patch(ctx, "scratch", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"velero.io/exclude-from-backup":"true"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	for name, labels := range map[string]map[string]string{
		"keep":     {"app": "shop"},
		"skip":     {"app": "shop", "cairn.io/exclude-from-backup": "true"},
		"not-true": {"cairn.io/exclude-from-backup": "false"},
	} {
		_, err := kc.CoreV1().ConfigMaps("excl").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	s.backup(workflows.BackupSpec{Name: "excl-1", IncludedNamespaces: []string{"excl"}})
	counts := tarballCounts(t, s, "excl-1")
	assert.Equal(t, 1, counts["configmaps"]["excl/keep"])
	assert.Equal(t, 1, counts["configmaps"]["excl/not-true"], "only the value true excludes")
	assert.NotContains(t, counts["configmaps"], "excl/skip")
	assert.Equal(t, map[string]int{"excl/data": 1}, counts["persistentvolumeclaims"])

	v, err := s.starter.GetBackup(ctx, "excl-1")
	require.NoError(t, err)
	require.Len(t, v.Status.Operations, 1, "only the claim left in is snapshotted: %+v", v.Status.Operations)
	assert.Equal(t, "data", v.Status.Operations[0].Volume.Claim)

	var results workflows.BackupResults
	require.NoError(t, json.Unmarshal(readLocation(t, s, "backups/excl-1/results.json"), &results))
	assert.ElementsMatch(t, []workflows.ResultEntry{
		{Resource: "configmaps", Namespace: "excl", Name: "skip", Message: "labelled cairn.io/exclude-from-backup=true"},
		{Resource: "persistentvolumeclaims", Namespace: "excl", Name: "scratch", Message: "labelled velero.io/exclude-from-backup=true"},
	}, results.Excluded)
}
