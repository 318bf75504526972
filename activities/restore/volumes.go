package restore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tidwall/gjson"
	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/backupmeta"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// claimShape is what a new volume needs to fit a backed-up claim.
type claimShape struct {
	storageClass string
	accessModes  []string
	sizeBytes    int64
	block        bool
}

func readClaimShape(data []byte) claimShape {
	f := gjson.GetManyBytes(data, "spec.storageClassName", "spec.accessModes", "spec.resources.requests.storage", "spec.volumeMode")
	s := claimShape{storageClass: f[0].String(), block: f[3].String() == "Block"}
	for _, m := range f[1].Array() {
		s.accessModes = append(s.accessModes, m.String())
	}
	if q, err := resource.ParseQuantity(f[2].String()); err == nil {
		s.sizeBytes = q.Value()
	}
	return s
}

// movedVolumes reads which claims of the backup had their data moved into
// the repository ("namespace/claim" as backed up), and which pod volumes
// it copied from their pods, by pod, with the claims among those. A
// backup without volumes.json moved none.
func movedVolumes(ctx context.Context, loc *location.Location, backup string, m *location.Manifest) (
	moved map[string]v1alpha1.VolumeRecord, podCopies map[string][]v1alpha1.VolumeRecord, copiedClaims map[string]bool, err error) {
	vols, err := backupmeta.CheckedVolumes(ctx, loc, backup, m)
	if errors.Is(err, location.ErrChecksum) {
		return nil, nil, nil, temporal.NewNonRetryableApplicationError("the backup is corrupt: "+err.Error(), v1alpha1.ErrTypeCorruptBackup, err)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	moved, podCopies, copiedClaims = map[string]v1alpha1.VolumeRecord{}, map[string][]v1alpha1.VolumeRecord{}, map[string]bool{}
	for _, v := range vols {
		if v.Phase != v1alpha1.OperationCompleted || v.Upload == nil || v.Upload.SnapshotID == "" {
			continue
		}
		if pv := v.Volume.PodVolume; pv != nil {
			key := v.Volume.Namespace + "/" + pv.Pod
			podCopies[key] = append(podCopies[key], v)
			if v.Volume.Claim != "" {
				copiedClaims[v.Volume.Namespace+"/"+v.Volume.Claim] = true
			}
		} else {
			moved[v.Volume.Key()] = v
		}
	}
	return moved, podCopies, copiedClaims, nil
}

var claimsGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}

// planVolumes lists the selected claims whose data is written back from
// the repository. A claim that already exists in the target namespace
// keeps its volume: its data is not restored, with a warning.
func planVolumes(ctx context.Context, clients *kube.Clients, run *runlog.Run, spec v1alpha1.RestoreSpec, idx *backupIndex,
	p *restorePlan) ([]v1alpha1.RestoreVolume, error) {
	if _, planned := p.types[claimsGroupResource]; !planned || len(idx.moved) == 0 {
		return nil, nil
	}
	var warnings []string
	var vols []v1alpha1.RestoreVolume
	for _, key := range slices.Sorted(maps.Keys(idx.moved)) {
		rec, shape := idx.moved[key], idx.claimShapes[key]
		if !idx.claims[key] {
			continue
		}
		ns := spec.MapNamespace(rec.Volume.Namespace)
		if shape.block {
			warnings = append(warnings, fmt.Sprintf("claim %s/%s is a block volume: its moved data cannot be restored", ns, rec.Volume.Claim))
			continue
		}
		_, err := clients.Dynamic.Resource(claimsGVR).Namespace(ns).Get(ctx, rec.Volume.Claim, metav1.GetOptions{})
		switch {
		case apierrors.IsForbidden(err):
			warnings = append(warnings, fmt.Sprintf("claim %s/%s: its data is not restored, the restore may not read claims there: %v", ns, rec.Volume.Claim, err))
			continue
		case err == nil:
			warnings = append(warnings, fmt.Sprintf("claim %s/%s exists in the cluster: it keeps its volume, and the backup's data of it is not restored (delete the claim first to restore it)", ns, rec.Volume.Claim))
			continue
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("claim %s/%s: %w", ns, rec.Volume.Claim, err)
		}
		v := v1alpha1.RestoreVolume{
			ID: v1alpha1.VolumeRestoreID(ns, rec.Volume.Claim), Namespace: ns, Claim: rec.Volume.Claim,
			SnapshotID: rec.Upload.SnapshotID, Bytes: rec.Upload.Bytes, Files: rec.Upload.Files,
			StorageClass: shape.storageClass, AccessModes: shape.accessModes, SizeBytes: shape.sizeBytes,
		}
		if v.StorageClass == "" {
			v.StorageClass = rec.Volume.StorageClass
		}
		if to, ok := p.storageClasses[v.StorageClass]; ok {
			v.StorageClass = to
		}
		if ns != rec.Volume.Namespace {
			v.SourceNamespace = rec.Volume.Namespace
		}
		vols = append(vols, v)
	}
	if err := run.Loc.WriteAll(ctx, run.Restore.Warnings("volumes"), jsonLines(warnings)); err != nil {
		return nil, err
	}
	return vols, nil
}

// copiedVolumeReplaces is why a PersistentVolume is not restored: its
// claim's data is a file-system copy taken from a pod, which a restore
// writes into the new volume the claim gets from its storage class, on
// the node where the restored pod runs (the old volume may be another
// claim's, or a directory of another node).
func copiedVolumeReplaces(pv string, idx *backupIndex) string {
	claim := idx.volumeClaims[pv]
	if !idx.copiedClaims[claim] {
		return ""
	}
	return "the data of its claim " + claim + " is a file-system copy: the claim gets a new volume, and the copy is written into it from the restored pod"
}

// movedVolumeReplaces is why a PersistentVolume is not restored: its
// claim's data was moved into the repository, and a restore writes it
// into a new volume (or, for a claim that exists, leaves its volume).
func movedVolumeReplaces(pv string, idx *backupIndex) string {
	claim := idx.volumeClaims[pv]
	if _, moved := idx.moved[claim]; !moved {
		return ""
	}
	return "the data of its claim " + claim + " was moved into the repository: the claim gets a new volume with that data, or keeps its volume if it exists"
}
