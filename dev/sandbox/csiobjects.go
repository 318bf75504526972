package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	storagev1ac "k8s.io/client-go/applyconfigurations/storage/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cairn-backup/cairn/internal/csistate"
)

const (
	// fieldManager owns the fields the sandbox applies.
	fieldManager = "cairn-sandbox"
	// managedByLabel marks the objects the sandbox creates.
	managedByLabel = "app.kubernetes.io/managed-by"
)

// The resources of the VolumeSnapshot CRDs, used through the dynamic
// client so the sandbox needs no snapshot client module.
var (
	volumeSnapshotClasses  = snapshotResource("volumesnapshotclasses")
	volumeSnapshotContents = snapshotResource("volumesnapshotcontents")
	volumeSnapshots        = snapshotResource("volumesnapshots")
)

func snapshotResource(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: resource}
}

// installSnapshotCRDs creates or updates the VolumeSnapshot CRDs from dir
// and waits until the API server serves them (envtest's installer, which
// the control plane already comes from; it is bounded by its MaxTime, not
// by a context).
func installSnapshotCRDs(cfg *rest.Config, dir string, maxTime time.Duration, log *zap.Logger) error {
	start := time.Now()
	paths := make([]string, len(snapshotCRDs))
	for i, file := range snapshotCRDs {
		paths[i] = filepath.Join(dir, file)
	}
	crds, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true,
		MaxTime: maxTime, PollInterval: pollInterval})
	if err != nil {
		return fmt.Errorf("sandbox: install the VolumeSnapshot CRDs: %w", err)
	}
	names := make([]string, len(crds))
	for i, crd := range crds {
		names[i] = crd.Name
	}
	log.Info("VolumeSnapshot CRDs established", zap.Strings("crds", names), zap.Duration("took", time.Since(start)))
	return nil
}

// waitWatchCaches waits until the API server serves the watch list (a
// watch with the initial objects) that the sidecars' informers start with,
// for each VolumeSnapshot resource. Right after a CRD is established, and
// after the API server starts, the resource's watch cache is still filling
// and such a watch is answered 429 with Retry-After: 1s: the informers
// would sync a second late, and a snapshot taken at once would wait for
// them. This polls faster than the Retry-After.
func waitWatchCaches(ctx context.Context, cs kubernetes.Interface, log *zap.Logger) error {
	start := time.Now()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for _, gvr := range []schema.GroupVersionResource{volumeSnapshotClasses, volumeSnapshotContents, volumeSnapshots} {
		path := "/apis/" + gvr.GroupVersion().String() + "/" + gvr.Resource
		for {
			body, err := cs.Discovery().RESTClient().Get().AbsPath(path).
				Param("watch", "true").
				Param("sendInitialEvents", "true").
				Param("resourceVersionMatch", string(metav1.ResourceVersionMatchNotOlderThan)).
				Param("allowWatchBookmarks", "true").
				Param("timeoutSeconds", "1").
				MaxRetries(0).
				Stream(ctx)
			if err == nil {
				body.Close()
				break
			}
			if !apierrors.IsTooManyRequests(err) {
				return fmt.Errorf("sandbox: watch %s: %w", gvr.Resource, err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("sandbox: watch cache of %s not ready after %s: %w",
					gvr.Resource, time.Since(start).Round(time.Millisecond), ctx.Err())
			case <-tick.C:
			}
		}
	}
	log.Info("VolumeSnapshot watch caches ready", zap.Duration("took", time.Since(start)))
	return nil
}

// ensureCSIClasses applies CSIStorageClass and CSISnapshotClass (server-side
// apply: a restart of the same DataDir changes nothing). A StorageClass's
// provisioner and policies are immutable; if an older one differs, it is
// replaced.
func ensureCSIClasses(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("sandbox: client: %w", err)
	}
	labels := map[string]string{managedByLabel: fieldManager}
	sc := storagev1ac.StorageClass(CSIStorageClass).
		WithLabels(labels).
		WithAnnotations(map[string]string{"storageclass.kubernetes.io/is-default-class": "false"}).
		WithProvisioner(csistate.DriverName).
		WithReclaimPolicy(corev1.PersistentVolumeReclaimDelete).
		WithVolumeBindingMode(storagev1.VolumeBindingImmediate).
		WithAllowVolumeExpansion(false)
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	classes := cs.StorageV1().StorageClasses()
	_, err = classes.Apply(ctx, sc, opts)
	if apierrors.IsInvalid(err) {
		// An immutable field differs: replace the class. Existing volumes
		// keep their own reclaim policy and are not affected.
		if err = classes.Delete(ctx, CSIStorageClass, metav1.DeleteOptions{}); err == nil || apierrors.IsNotFound(err) {
			_, err = classes.Apply(ctx, sc, opts)
		}
	}
	if err != nil {
		return fmt.Errorf("sandbox: apply StorageClass %s: %w", CSIStorageClass, err)
	}

	// The driver's CSIDriver: no attach step (its volumes are local
	// directories), so the node's kubelet mounts them at once, and gives
	// a pod's fsGroup the volume's files, as most block-backed drivers do.
	driver := storagev1ac.CSIDriver(csistate.DriverName).WithLabels(labels).
		WithSpec(storagev1ac.CSIDriverSpec().WithAttachRequired(false).WithPodInfoOnMount(false).
			WithVolumeLifecycleModes(storagev1.VolumeLifecyclePersistent).WithFSGroupPolicy(storagev1.FileFSGroupPolicy))
	if _, err := cs.StorageV1().CSIDrivers().Apply(ctx, driver, opts); err != nil {
		return fmt.Errorf("sandbox: apply CSIDriver %s: %w", csistate.DriverName, err)
	}

	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("sandbox: dynamic client: %w", err)
	}
	vsc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": volumeSnapshotClasses.GroupVersion().String(),
		"kind":       "VolumeSnapshotClass",
		"metadata": map[string]any{
			"name":        CSISnapshotClass,
			"labels":      map[string]any{managedByLabel: fieldManager},
			"annotations": map[string]any{"snapshot.storage.kubernetes.io/is-default-class": "true"},
		},
		"driver":         csistate.DriverName,
		"deletionPolicy": "Delete",
	}}
	if _, err := dyn.Resource(volumeSnapshotClasses).Apply(ctx, CSISnapshotClass, vsc, opts); err != nil {
		return fmt.Errorf("sandbox: apply VolumeSnapshotClass %s: %w", CSISnapshotClass, err)
	}
	return nil
}

// VolumePath returns the directory holding the files of the volume bound to
// claim namespace/pvcName, a volume of the sandbox's CSI driver: what a pod
// mounting the claim would see. Tests write a volume's data there and read
// a restored volume's back.
func (c *Cluster) VolumePath(ctx context.Context, namespace, pvcName string) (string, error) {
	if c.csi == nil {
		return "", errNoCSI
	}
	pvc, err := c.cs.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, pvcName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("sandbox: volume path: %w", err)
	}
	claim := namespace + "/" + pvcName
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("sandbox: claim %s is not bound to a volume yet (phase %s)", claim, pvc.Status.Phase)
	}
	pv, err := c.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("sandbox: volume path of claim %s: %w", claim, err)
	}
	src := pv.Spec.CSI
	if src == nil || src.Driver != csistate.DriverName {
		return "", fmt.Errorf("sandbox: volume %s of claim %s is not a volume of CSI driver %s", pv.Name, claim, csistate.DriverName)
	}
	if !csistate.IsVolumeID(src.VolumeHandle) {
		return "", fmt.Errorf("sandbox: volume %s of claim %s has handle %q, not one of the sandbox driver's", pv.Name, claim, src.VolumeHandle)
	}
	dir := csistate.VolumeDirForHandle(c.csi.stateDir, src.VolumeHandle)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("sandbox: volume %s of claim %s: %w", pv.Name, claim, err)
	}
	return dir, nil
}
