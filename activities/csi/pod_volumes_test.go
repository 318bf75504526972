package csi

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/volumepolicy"
)

func runningPod(name string, annotations map[string]string, volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name), Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: "node-1", Volumes: volumes},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func emptyDirVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

// selectorFor is a selector over a cluster with a local volume bound to
// claim shop/files and an NFS volume bound to shop/shared.
func selectorFor(t *testing.T, copyAll bool, policies string) *podVolumeSelector {
	t.Helper()
	bound := func(claim, pv string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: claim},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	}
	pvs := map[string]*corev1.PersistentVolume{
		"pv-local": {ObjectMeta: metav1.ObjectMeta{Name: "pv-local"}, Spec: corev1.PersistentVolumeSpec{StorageClassName: "local",
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}}}},
		"pv-nfs": {ObjectMeta: metav1.ObjectMeta{Name: "pv-nfs"}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nas", Path: "/export"}}}},
	}
	var p *volumepolicy.Policies
	if policies != "" {
		var err error
		p, err = volumepolicy.Parse([]byte(policies))
		require.NoError(t, err)
	}
	return &podVolumeSelector{
		copyAll: copyAll, policies: p, snapshotted: map[string]bool{"shop/db": true}, copied: map[string]bool{},
		claims: fake.NewClientset(bound("files", "pv-local"), bound("shared", "pv-nfs"), bound("db", "pv-csi")),
		volumes: func(_ context.Context, c corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
			return pvs[c.Spec.VolumeName], nil
		},
	}
}

func selectedKeys(s *podVolumeSelector) map[string]string {
	out := map[string]string{}
	for _, v := range s.selected {
		out[v.Key()] = v.PodVolume.Dir + " by " + v.PodVolume.SelectedBy
	}
	return out
}

// TestPodVolumesOptIn: a pod's annotation names the volumes copied; a
// snapshotted claim is not copied too, a Secret never is, and names the
// pod lacks or a pod that does not run are warnings.
func TestPodVolumesOptIn(t *testing.T) {
	ctx := context.Background()
	s := selectorFor(t, false, "")
	secret := corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "t"}}}
	web := runningPod("web", map[string]string{
		"backup.velero.io/backup-volumes": "cache, data,missing,token",
		"cairn.io/backup-volumes":         "files",
	}, emptyDirVolume("cache"), claimVolume("data", "db"), claimVolume("files", "files"), secret, emptyDirVolume("scratch"))
	require.NoError(t, s.pod(ctx, web))
	pending := runningPod("job", map[string]string{"cairn.io/backup-volumes": "out"}, emptyDirVolume("out"))
	pending.Status.Phase = corev1.PodPending
	require.NoError(t, s.pod(ctx, pending))

	assert.Equal(t, map[string]string{
		"shop/web/cache": "volumes/kubernetes.io~empty-dir/cache by backup.velero.io/backup-volumes",
		"shop/web/files": "volumes/kubernetes.io~local-volume/pv-local by cairn.io/backup-volumes",
	}, selectedKeys(s))
	files := s.selected[1]
	assert.Equal(t, v1alpha1.Volume{Namespace: "shop", Claim: "files", PersistentVolume: "pv-local", StorageClass: "local",
		PodVolume: &v1alpha1.PodVolume{Pod: "web", UID: "uid-web", Volume: "files", Node: "node-1",
			Dir: "volumes/kubernetes.io~local-volume/pv-local", Source: "persistentVolumeClaim", SelectedBy: "cairn.io/backup-volumes"}}, files)
	assert.Equal(t, []string{
		"pod shop/web: backup.velero.io/backup-volumes names volume token, a secret volume, which is never copied",
		"pod shop/web: backup.velero.io/backup-volumes names volume missing, which the pod does not have",
		"pod shop/job is Pending, not Running: its volumes out are not copied",
	}, s.allWarnings())
	assert.True(t, s.copied["shop/files"])
}

// TestPodVolumesOptOut: defaultVolumesToFsBackup copies every volume but
// the excluded ones, Secrets and hostPaths; a claim two pods mount is
// copied once.
func TestPodVolumesOptOut(t *testing.T) {
	ctx := context.Background()
	s := selectorFor(t, true, "")
	host := corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}}
	api := runningPod("api", map[string]string{"backup.velero.io/backup-volumes-excludes": "tmp"},
		emptyDirVolume("tmp"), emptyDirVolume("cache"), claimVolume("files", "files"), claimVolume("data", "db"), host)
	api2 := runningPod("api-2", nil, claimVolume("files", "files"))
	require.NoError(t, s.pod(ctx, api))
	require.NoError(t, s.pod(ctx, api2))
	assert.Equal(t, map[string]string{
		"shop/api/cache": "volumes/kubernetes.io~empty-dir/cache by defaultVolumesToFsBackup",
		"shop/api/files": "volumes/kubernetes.io~local-volume/pv-local by defaultVolumesToFsBackup",
	}, selectedKeys(s))
	assert.Empty(t, s.allWarnings())
}

// TestPodVolumesByPolicy: a volume policy's fs-backup copies a volume
// no annotation names, and its skip wins over the annotation.
func TestPodVolumesByPolicy(t *testing.T) {
	ctx := context.Background()
	s := selectorFor(t, false, `version: v1
volumePolicies:
- conditions: {nfs: {server: nas}}
  action: {type: fs-backup}
- conditions: {volumeTypes: [emptyDir]}
  action: {type: skip}
`)
	web := runningPod("web", map[string]string{"cairn.io/backup-volumes": "cache"}, emptyDirVolume("cache"), claimVolume("shared", "shared"))
	require.NoError(t, s.pod(ctx, web))
	assert.Equal(t, map[string]string{
		"shop/web/shared": "volumes/kubernetes.io~nfs/pv-nfs by volumePolicies[0]",
	}, selectedKeys(s))
	assert.Equal(t, []string{"pod shop/web: cairn.io/backup-volumes asks to copy volume cache, but volumePolicies[1] skips it"}, s.allWarnings())
}

// TestPodVolumesOfAClaimTheCallerMayNotRead: a claim the run's caller
// may not read is a warning, not a failed plan.
func TestPodVolumesOfAClaimTheCallerMayNotRead(t *testing.T) {
	s := selectorFor(t, false, "")
	forbid := s.claims.(*fake.Clientset)
	forbid.PrependReactor("get", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "files", errors.New("no"))
	})
	web := runningPod("web", map[string]string{"cairn.io/backup-volumes": "files"}, claimVolume("files", "files"))
	require.NoError(t, s.pod(context.Background(), web))
	assert.Empty(t, s.selected)
	require.Len(t, s.allWarnings(), 1)
	assert.Contains(t, s.allWarnings()[0], "pod shop/web: volume files is not copied: the backup's caller may not read the claim")
}
