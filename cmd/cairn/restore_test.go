package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

func TestRestoreCreateFlagMistakesAreUsageErrors(t *testing.T) {
	for name, cf := range map[string]*restoreCreateFlags{
		"no backup":   {},
		"bad mapping": {req: starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{BackupName: "b"}}, namespaceMappings: []string{"shop"}},
	} {
		var usage *usageError
		assert.True(t, errors.As(cf.complete("r", noneChanged), &usage), name)
	}
}

func TestRestoreCreateFlagsFillTheRequest(t *testing.T) {
	cf := &restoreCreateFlags{
		req:               starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{BackupName: "nightly"}},
		namespaceMappings: []string{"shop:shop-copy"},
		existingPolicy:    "update",
		clusterResources:  "exclude",
		restoreStatus:     []string{"*.example.com"},
	}
	require.NoError(t, cf.complete("r1", func(f string) bool { return f == "cluster-resources" }))
	assert.Equal(t, "r1", cf.req.Name)
	assert.Equal(t, map[string]string{"shop": "shop-copy"}, cf.req.NamespaceMapping)
	assert.Equal(t, v1alpha1.ExistingResourceUpdate, cf.req.ExistingResourcePolicy)
	assert.Equal(t, v1alpha1.ClusterResourcesExclude, cf.req.ClusterResources)
	assert.Equal(t, []string{"*.example.com"}, cf.req.RestoreStatus.IncludedResources)
}

func noneChanged(string) bool { return false }

// A flag left at its default leaves the spec's field empty, so a Restore
// resource in a team's namespace is not refused for a default it never
// asked for.
func TestRestoreCreateLeavesClusterResourcesToTheDefault(t *testing.T) {
	cf := &restoreCreateFlags{req: starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{BackupName: "nightly"}},
		clusterResources: string(v1alpha1.ClusterResourcesAuto)}
	require.NoError(t, cf.complete("r1", noneChanged))
	assert.Empty(t, cf.req.ClusterResources)
}

func TestRestoreCreateDataMoverFlags(t *testing.T) {
	cf := &restoreCreateFlags{}
	fs := pflag.NewFlagSet("create", pflag.ContinueOnError)
	cf.register(fs)
	require.NoError(t, fs.Parse([]string{"--from-backup", "nightly", "--datamover-prepare-timeout", "10m",
		"--datamover-timeout", "2h", "--volume-concurrency", "2"}))
	require.NoError(t, cf.complete("r1", fs.Changed))
	assert.Equal(t, 10*time.Minute, cf.req.DataMoverPrepareTimeout.Duration)
	assert.Equal(t, 2*time.Hour, cf.req.DataMoverTimeout.Duration)
	assert.Equal(t, 2, cf.req.Options.VolumeConcurrency)

	cf = &restoreCreateFlags{}
	fs = pflag.NewFlagSet("create", pflag.ContinueOnError)
	cf.register(fs)
	require.NoError(t, fs.Parse([]string{"--from-backup", "nightly"}))
	require.NoError(t, cf.complete("r1", fs.Changed))
	assert.Nil(t, cf.req.DataMoverPrepareTimeout, "left to the default")
	assert.Nil(t, cf.req.DataMoverTimeout, "left to the default")
}

func TestDescribeRestoreListsTypesInRestoreOrder(t *testing.T) {
	start := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	v := &starter.RestoreView{
		Name: "r1", Phase: v1alpha1.PhaseInProgress, StartTime: &start,
		Spec: &v1alpha1.RestoreSpec{BackupName: "nightly", NamespaceMapping: map[string]string{"shop": "shop-copy"}},
		Status: &v1alpha1.RestoreStatus{
			Order:   []string{"namespaces", "configmaps", "deployments.apps"},
			Current: "configmaps",
			Resources: map[string]v1alpha1.TypeOutcome{
				"deployments.apps": {Total: 2},
				"configmaps":       {Total: 5, Restored: 3},
				"namespaces":       {Total: 1, Restored: 1, Done: true},
			},
			Skipped: []v1alpha1.SkippedResource{{Resource: "nodes", Reason: "nodes belong to the target cluster's machines"}},
		},
	}
	var buf bytes.Buffer
	out := outputFlag{format: "table"}
	require.NoError(t, out.print(&buf, v, func(w io.Writer) { describeRestore(w, v) }))
	text := buf.String()
	assert.Contains(t, text, "shop -> shop-copy")
	ns, cm, dep := strings.Index(text, "namespaces "), strings.Index(text, "configmaps "), strings.Index(text, "deployments.apps ")
	assert.True(t, ns < cm && cm < dep, text)
	assert.Regexp(t, `configmaps\s+5\s+3\s+0\s+0\s+restoring`, text)
	assert.Regexp(t, `deployments.apps\s+2\s+0\s+0\s+0\s+pending`, text)
	assert.Contains(t, text, "nodes belong to")
	assert.Equal(t, "r1: InProgress, 0/0 resource types, 0 restored, 0 skipped, 0 failed of 0", restoreProgress(v))
}

func TestResultsOnlyKeepsOneResult(t *testing.T) {
	res := &v1alpha1.RestoreResults{
		Items: []v1alpha1.ItemOutcome{
			{Resource: "configmaps", Namespace: "shop-copy", SourceNamespace: "shop", Name: "a", Result: v1alpha1.ItemRestored, Action: v1alpha1.ActionCreated},
			{Resource: "pods", Namespace: "shop-copy", Name: "p", Result: v1alpha1.ItemSkipped, Reason: "owned by ReplicaSet web"},
		},
		Skipped: []v1alpha1.SkippedResource{{Resource: "events", Reason: "ephemeral"}},
	}
	got := onlyResult(res, v1alpha1.ItemSkipped)
	require.Len(t, got.Items, 1)
	assert.Equal(t, "p", got.Items[0].Name)
	assert.Len(t, got.Skipped, 1)
	assert.Empty(t, onlyResult(res, v1alpha1.ItemFailed).Skipped)
	assert.Len(t, res.Items, 2, "the original is left alone")

	var buf bytes.Buffer
	out := outputFlag{format: "table"}
	require.NoError(t, out.print(&buf, res, func(w io.Writer) { resultsTable(w, res, "") }))
	assert.Contains(t, buf.String(), "shop-copy (from shop)")
}

func TestDescribeShowsTheStepsBeingRetried(t *testing.T) {
	var b strings.Builder
	retryingRows(&b, []starter.RetryingStep{{Step: "FinalizeRestore", Attempt: 4, MaxAttempts: 25, LastError: "disk full"}})
	assert.Contains(t, b.String(), "FinalizeRestore, attempt 4 of 25, last error: disk full")
}

func TestDescribeListsPodVolumeCopies(t *testing.T) {
	var b strings.Builder
	podVolumeRestoresTable(&b, []v1alpha1.VolumeRestoreStatus{
		{RestoreVolume: v1alpha1.RestoreVolume{Namespace: "shop", SnapshotID: "k1", PodVolume: &v1alpha1.PodVolume{Pod: "web-1", Volume: "cache"}},
			Phase: v1alpha1.OperationCompleted, Download: &v1alpha1.DataDownloadInfo{Bytes: 2048, Files: 3, Attempts: 2, Node: "n1"}},
		{RestoreVolume: v1alpha1.RestoreVolume{Namespace: "shop", SnapshotID: "k2", PodVolume: &v1alpha1.PodVolume{Pod: "api", Volume: "keep"}},
			Phase: v1alpha1.OperationFailed, Error: "pod shop/api is not scheduled yet after 30m0s"},
	})
	text := b.String()
	assert.Regexp(t, `shop/web-1/cache\s+Completed\s+.*k1\s+n1\s+2.0 KiB in 3 files written in .* \(2 data movers\)`, text)
	assert.Regexp(t, `shop/api/keep\s+Failed\s+.*k2\s+-\s+pod shop/api is not scheduled yet`, text)
}
