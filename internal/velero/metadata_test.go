package velero

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// A velero-backup.json as Velero uploads it, with fields cairn ignores.
const nightly = `{
  "kind": "Backup",
  "apiVersion": "velero.io/v1",
  "metadata": {
    "name": "nightly-20240102",
    "namespace": "velero",
    "uid": "0f6c1f1e-1111-4c1a-9b59-5b4a3f0d2a10",
    "creationTimestamp": "2024-01-02T03:00:00Z",
    "labels": {"velero.io/storage-location": "default", "velero.io/schedule-name": "nightly"}
  },
  "spec": {
    "includedNamespaces": ["shop", "billing"],
    "excludedNamespaces": ["kube-system"],
    "includedResources": ["*"],
    "excludedResources": ["events", "events.events.k8s.io"],
    "labelSelector": {
      "matchLabels": {"app": "web"},
      "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]
    },
    "ttl": "168h0m0s",
    "storageLocation": "default",
    "includeClusterResources": false,
    "snapshotVolumes": true,
    "defaultVolumesToFsBackup": false
  },
  "status": {
    "version": 1,
    "formatVersion": "1.1.0",
    "phase": "PartiallyFailed",
    "startTimestamp": "2024-01-02T03:00:01Z",
    "completionTimestamp": "2024-01-02T03:04:05Z",
    "expiration": "2024-01-09T03:00:01Z",
    "progress": {"totalItems": 120, "itemsBackedUp": 118},
    "errors": 2,
    "warnings": 5,
    "hookStatus": {}
  }
}`

func TestParseAndMetadata(t *testing.T) {
	b, err := Parse([]byte(nightly))
	require.NoError(t, err)
	assert.Equal(t, "nightly-20240102", b.Name)

	start := time.Date(2024, 1, 2, 3, 0, 1, 0, time.UTC)
	done := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	expires := time.Date(2024, 1, 9, 3, 0, 1, 0, time.UTC)
	assert.Equal(t, v1alpha1.BackupMetadata{
		APIVersion:    v1alpha1.MetadataAPIVersion,
		Kind:          v1alpha1.MetadataKindBackup,
		Name:          "nightly-20240102",
		FormatVersion: "1.1.0",
		Format:        v1alpha1.BackupFormatVelero,
		Spec: v1alpha1.BackupSpec{
			Name:               "nightly-20240102",
			IncludedNamespaces: []string{"shop", "billing"},
			ExcludedNamespaces: []string{"kube-system"},
			IncludedResources:  []string{"*"},
			ExcludedResources:  []string{"events", "events.events.k8s.io"},
			ClusterResources:   v1alpha1.ClusterResourcesExclude,
			LabelSelector:      "app=web,tier in (back,front)",
			TTL:                &metav1.Duration{Duration: 168 * time.Hour},
		},
		Status: v1alpha1.BackupStatus{
			Name:           "nightly-20240102",
			Phase:          v1alpha1.PhasePartiallyFailed,
			StartTime:      &start,
			CompletionTime: &done,
			Expiration:     &expires,
			ItemsDone:      118,
			ItemsEstimate:  120,
			Errors:         2,
			Warnings:       5,
		},
	}, b.Metadata())
}

func TestMetadataDefaults(t *testing.T) {
	b, err := Parse([]byte(`{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"bare"},
		"spec":{"orLabelSelectors":[{"matchLabels":{"a":"1"}},{"matchLabels":{"b":"2"}}]}}`))
	require.NoError(t, err)
	m := b.Metadata()
	assert.Equal(t, v1alpha1.ClusterResourcesAuto, m.Spec.ClusterResources, "no includeClusterResources is auto")
	assert.Empty(t, m.Spec.LabelSelector)
	assert.Equal(t, []string{"a=1", "b=2"}, m.Spec.OrLabelSelectors)
	assert.Nil(t, m.Spec.TTL)
	assert.Empty(t, m.Spec.StorageLocation)
	assert.Nil(t, m.Status.StartTime)
	assert.Zero(t, m.Status.ItemsDone)
	assert.Equal(t, v1alpha1.PhaseInProgress, m.Status.Phase, "no phase is a backup Velero has not finished")

	include := true
	b.Spec.IncludeClusterResources = &include
	assert.Equal(t, v1alpha1.ClusterResourcesInclude, b.Metadata().Spec.ClusterResources)
}

func TestPhases(t *testing.T) {
	cases := []struct {
		velero string
		phase  v1alpha1.Phase
		reason string
	}{
		{"Completed", v1alpha1.PhaseCompleted, ""},
		{"PartiallyFailed", v1alpha1.PhasePartiallyFailed, ""},
		{"Failed", v1alpha1.PhaseFailed, "boom"},
		{"FailedValidation", v1alpha1.PhaseFailed, "failed Velero's validation: [bad ttl]"},
		{"Deleting", v1alpha1.PhaseFailed, "being deleted by Velero"},
		{"New", v1alpha1.PhaseInProgress, ""},
		{"InProgress", v1alpha1.PhaseInProgress, ""},
		{"WaitingForPluginOperations", v1alpha1.PhaseInProgress, ""},
		{"WaitingForPluginOperationsPartiallyFailed", v1alpha1.PhaseInProgress, ""},
		{"Finalizing", v1alpha1.PhaseInProgress, ""},
		{"FinalizingPartiallyFailed", v1alpha1.PhaseInProgress, ""},
	}
	for _, c := range cases {
		b := Backup{Status: BackupStatus{Phase: c.velero, FailureReason: "boom", ValidationErrors: []string{"bad ttl"}}}
		b.Name = "b"
		m := b.Metadata()
		assert.Equal(t, c.phase, m.Status.Phase, c.velero)
		assert.Equal(t, c.reason, m.Status.FailureReason, c.velero)
	}
}

func TestParseRejects(t *testing.T) {
	for data, want := range map[string]string{
		`not json`: "decode velero backup",
		`{"apiVersion":"velero.io/v1","kind":"Restore","metadata":{"name":"r"}}`:                      `kind "Restore"`,
		`{"apiVersion":"velero.io/v2","kind":"Backup","metadata":{"name":"b"}}`:                       `apiVersion "velero.io/v2"`,
		`{"apiVersion":"cairn.dev/v1alpha1","kind":"Backup","name":"b"}`:                              "not a Velero backup",
		`{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{}}`:                                 "without metadata.name",
		`{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"b"},"spec":{"ttl":"soon"}}`: "decode velero backup",
		`{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"b"},
		  "spec":{"labelSelector":{"matchExpressions":[{"key":"a","operator":"Near"}]}}}`: "velero backup b: label selector",
		`{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"b"},
		  "spec":{"orLabelSelectors":[{"matchLabels":{"bad key!":"x"}}]}}`: "label selector",
	} {
		_, err := Parse([]byte(data))
		assert.ErrorContains(t, err, want, data)
	}
}
