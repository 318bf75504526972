package main

import (
	"bytes"
	"testing"
	"text/tabwriter"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func TestDryRunReadsAsATable(t *testing.T) {
	r := &v1alpha1.BackupDryRun{Name: "shop-1", WorkflowID: "dry-run/backup/shop-1/ab12", Namespaces: 1,
		Resources: map[string]int{"configmaps": 3, "priorityclasses.scheduling.k8s.io": 1},
		Related:   map[string][]string{"priorityclasses.scheduling.k8s.io": {"shop-critical"}},
		Volumes: []v1alpha1.DryRunVolume{{Volume: v1alpha1.Volume{Namespace: "shop", Claim: "data", Driver: "csi.example", SnapshotClass: "snap"},
			Action: "snapshot and move data"}},
		Hooks:    []v1alpha1.HookedPod{{Namespace: "shop", Name: "db", Claims: []string{"shop/data"}, Pre: []v1alpha1.PodHook{{Command: []string{"fsfreeze", "-f", "/data"}}}}},
		Warnings: []string{"persistentvolumeclaims: claim shop/cache: skipped by a volume policy"}, WarningsTotal: 3}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	describeDryRun(tw, r)
	assert.NoError(t, tw.Flush())
	out := buf.String()
	assert.Contains(t, out, "4 in 2 resource types across 1 namespaces")
	assert.Regexp(t, `priorityclasses.scheduling.k8s.io\s+1\s+shop-critical`, out)
	assert.Regexp(t, `shop/data\s+snapshot and move data\s+csi.example\s+snap`, out)
	assert.Regexp(t, `shop/db\s+fsfreeze -f /data\s+-\s+shop/data`, out)
	assert.Contains(t, out, "... and 2 more")
}
