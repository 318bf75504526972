package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

func TestEveryBackupBecomesAResourceAndAGoneOneIsMarkedDeleted(t *testing.T) {
	ended := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	fromResource := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: cairnNS},
		Status: v1alpha1.ResourceStatus{Phase: v1alpha1.PhaseCompleted, RunName: "own"}}
	expired := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: cairnNS},
		Status: v1alpha1.ResourceStatus{Phase: v1alpha1.PhaseCompleted, RunName: "old"}}
	r, runs, kube := newBackupReconciler(t, fromResource, expired)
	runs.listed = []*starter.BackupView{
		{Name: "own", Phase: v1alpha1.PhaseCompleted, Source: starter.SourceTemporal},
		{Name: "api-1", Phase: v1alpha1.PhaseCompleted, Source: starter.SourceTemporal, WorkflowID: "backup/api-1", EndTime: &ended,
			Spec:   &v1alpha1.BackupSpec{Name: "api-1", IncludedNamespaces: []string{"shop"}},
			Status: &v1alpha1.BackupStatus{ItemsDone: 7}},
		{Name: "nightly-20261127020000", Phase: v1alpha1.PhaseInProgress, Source: starter.SourceTemporal,
			WorkflowID: "backup/nightly-20261127020000", Spec: &v1alpha1.BackupSpec{Name: "nightly-20261127020000"}},
		{Name: "team-a.mine", Phase: v1alpha1.PhaseCompleted, Source: starter.SourceLocation,
			Spec: &v1alpha1.BackupSpec{Name: "team-a.mine", IncludedNamespaces: []string{"team-a"}}},
		{Name: "deleted", Phase: v1alpha1.PhaseDeleted, Source: starter.SourceTemporal},
		{Name: "old", Phase: v1alpha1.PhaseDeleted, Source: starter.SourceTemporal},
	}
	m := &backupMirror{kube: kube, runs: runs, tenancy: r.tenancy, interval: time.Minute, log: zaptest.NewLogger(t)}
	require.NoError(t, m.sync(context.Background()))
	require.NoError(t, m.sync(context.Background()), "a second pass finds everything in place")

	var list v1alpha1.BackupList
	require.NoError(t, kube.List(context.Background(), &list))
	got := map[string]v1alpha1.Backup{}
	for _, b := range list.Items {
		got[b.Namespace+"/"+b.Name] = b
	}
	assert.Len(t, got, 5, "one resource per backup; none for a deleted one: %v", got)
	api := got[cairnNS+"/api-1"]
	assert.Equal(t, v1alpha1.PhaseCompleted, api.Status.Phase)
	assert.Equal(t, 7, api.Status.Items)
	assert.Equal(t, []string{"shop"}, api.Spec.IncludedNamespaces)
	assert.Equal(t, starter.SourceTemporal, api.Annotations[v1alpha1.AnnotationMirrored])
	assert.Contains(t, api.Finalizers, v1alpha1.FinalizerDeleteData, "deleting it deletes the backup, as for any Backup")
	assert.Equal(t, v1alpha1.PhaseInProgress, got[cairnNS+"/nightly-20261127020000"].Status.Phase)
	assert.Equal(t, "backup/nightly-20261127020000", got[cairnNS+"/nightly-20261127020000"].Status.WorkflowID)
	team := got["team-a/mine"]
	assert.Equal(t, "team-a.mine", team.Status.RunName, "a namespace's backup is shown in its namespace")
	assert.Empty(t, team.Spec.Name)
	assert.Equal(t, v1alpha1.PhaseDeleted, got[cairnNS+"/old"].Status.Phase, "a backup deleted since is marked, not removed")
	assert.Equal(t, v1alpha1.PhaseCompleted, got[cairnNS+"/own"].Status.Phase)

	// The reconciler follows a mirrored run in progress, and starts none.
	reconcileBackup(t, r, cairnNS, "nightly-20261127020000")
	reconcileBackup(t, r, cairnNS, "api-1")
	assert.Empty(t, runs.created, "a mirrored backup is never started again")
	closeRun(runs, r.waiter, "backup/nightly-20261127020000", v1alpha1.PhaseCompleted)
	b := reconcileBackup(t, r, cairnNS, "nightly-20261127020000")
	assert.Equal(t, v1alpha1.PhaseCompleted, b.Status.Phase)

	// Deleting a mirrored backup known only from its location deletes it.
	require.NoError(t, kube.Delete(context.Background(), &team))
	reconcileBackup(t, r, "team-a", "mine")
	assert.Equal(t, []string{"team-a.mine"}, runs.deleted)
}
