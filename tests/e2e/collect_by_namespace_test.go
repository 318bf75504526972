package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// TestWholeClusterBackupListsAHugeTypeByNamespace: in a whole-cluster
// backup, a type the plan estimates large enough for its count to make a
// cluster-wide list slow is listed namespace by namespace, by activities
// that each list a share of the namespaces side by side; a worker
// SIGKILLed while they list is followed by one that resumes them, and
// every object is in the backup once. The types the plan's estimates
// found empty are taken as collected, not listed again.
func TestWholeClusterBackupListsAHugeTypeByNamespace(t *testing.T) {
	t.Parallel()
	// Its own cluster: the backup reads every namespace.
	s := newStack(t)
	// A pause after every page leaves the kill time to land mid-list.
	worker := s.startWorker("--page-interval", "100ms")
	// 6,000 ConfigMaps over a handful of namespaces is past the break-even
	// of ListsByNamespace (about 5,000 for 6 namespaces, 5,700 for 8); in
	// pages of 50 they are enough for shares of at least 20 pages each.
	want := seedConfigMaps(t, s.cluster.Config(), "huge", 2, 3000)

	_, err := s.starter.CreateBackup(context.Background(), starter.CreateBackupRequest{
		BackupSpec: v1alpha1.BackupSpec{Name: "everything"},
		Options:    v1alpha1.BackupOptions{PageSize: 50, HeartbeatTimeout: &metav1.Duration{Duration: 3 * time.Second}},
	})
	require.NoError(t, err)
	waitMidConfigMaps(t, s, "everything")
	worker.kill()
	s.startWorker("--page-interval", "100ms")
	v := s.waitDone("everything", 3*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	recordHistory(t, s, v1alpha1.BackupWorkflowID("everything"), "backup_namespace_shares.json")
	assert.Greater(t, activityAttempt(t, s, v1alpha1.BackupWorkflowID("everything"), collectActivity), int32(1),
		"the kill landed mid-list: a share was collected again")

	byNamespace := logLines(t, s, "everything", "Listing namespace by namespace")
	require.NotEmpty(t, byNamespace)
	for _, l := range byNamespace {
		assert.Equal(t, "configmaps", l["resource"], "one type is large enough")
		assert.GreaterOrEqual(t, l["estimate"], float64(len(want)))
	}
	shares := map[float64]bool{}
	for _, l := range logLines(t, s, "everything", "Listing a share of the namespaces") {
		assert.Equal(t, float64(4), l["of"], "as many shares as collections run at once")
		shares[l["share"].(float64)] = true
	}
	assert.Len(t, shares, 4, "each share listed by an activity of its own")

	// The plan's estimates found most types empty: collection took those
	// lists for the types' own and did not list them again.
	counts := tarballCounts(t, s, "everything")
	var emptyWhenPlanned []string
	for _, l := range logLines(t, s, "everything", "Collected") {
		if l["emptyWhenPlanned"] == true {
			emptyWhenPlanned = append(emptyWhenPlanned, l["resource"].(string))
			assert.Empty(t, counts[l["resource"].(string)], "%s was empty", l["resource"])
		}
	}
	assert.NotEmpty(t, emptyWhenPlanned, "a cluster has empty types")
	assert.NotContains(t, emptyWhenPlanned, "configmaps")
	assert.NotContains(t, emptyWhenPlanned, "namespaces", "not estimated: listed as the plan's namespaces are")

	stored := counts["configmaps"]
	for key := range want {
		assert.Equal(t, 1, stored[key], "%s stored once", key)
	}
	assert.Equal(t, 1, stored["kube-system/extension-apiserver-authentication"], "the other namespaces are listed too")
	assert.Equal(t, len(stored), v.Status.Resources["configmaps"].Items, "the shares' items add up to what is stored")
}
