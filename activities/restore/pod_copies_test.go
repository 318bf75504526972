package restore

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestPodCopiesAreWarnings: a restore of pods whose volumes the backup
// copied from them says, per volume and in the target namespace, that
// the copy is not written back and which kopia snapshot holds it; a
// restore without pods says nothing, and many copies are counted past
// the bound.
func TestPodCopiesAreWarnings(t *testing.T) {
	copyOf := func(pod, volume, snapshot string) v1alpha1.VolumeRecord {
		return v1alpha1.VolumeRecord{Volume: v1alpha1.Volume{Namespace: "shop", PodVolume: &v1alpha1.PodVolume{Pod: pod, Volume: volume}},
			Phase: v1alpha1.OperationCompleted, Upload: &v1alpha1.DataUploadInfo{SnapshotID: snapshot}}
	}
	idx := &backupIndex{podCopies: []v1alpha1.VolumeRecord{copyOf("web", "cache", "k1")}}
	spec := v1alpha1.RestoreSpec{NamespaceMapping: map[string]string{"shop": "shop-copy"}}
	withPods := &restorePlan{types: map[string]v1alpha1.RestoreType{"pods": {}}}
	assert.Equal(t, []string{"pod shop-copy/web: the backup holds a file-system copy of volume cache (kopia snapshot k1), " +
		"which cairn cannot write back into a restored pod yet: the pod starts without it (kopia snapshot restore can write it back)"},
		podCopyWarnings(spec, idx, withPods))
	assert.Empty(t, podCopyWarnings(spec, idx, &restorePlan{types: map[string]v1alpha1.RestoreType{"configmaps": {}}}))

	idx.podCopies = nil
	for i := range maxPodCopyWarnings + 5 {
		idx.podCopies = append(idx.podCopies, copyOf(fmt.Sprintf("p%d", i), "v", "k"))
	}
	warnings := podCopyWarnings(spec, idx, withPods)
	assert.Len(t, warnings, maxPodCopyWarnings+1)
	assert.Equal(t, "and 5 more pod volumes whose copies are not restored", warnings[maxPodCopyWarnings])
}
