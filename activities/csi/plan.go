package csi

import (
	"context"
	"fmt"
	"sort"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/internal/volumepolicy"
)

// volumeResultsKey is the per-type results file the volume plan writes
// its warnings to (read by finalize with the collect results).
const volumeResultsKey = "volume-snapshots"

// PlanVolumes finds the claims of a planned backup whose volumes are
// snapshotted: bound to a CSI volume whose driver has a
// VolumeSnapshotClass. Every other claim is a warning that names it. A
// cluster without the snapshot API fails the backup here, before anything
// is collected, when there is a CSI volume to snapshot. It also picks the
// volumes of the selected pods that are copied from the pods' directories
// on their nodes (file-system backup): those volumes' claims are no
// warning.
func (a *Activities) PlanVolumes(ctx context.Context, in v1alpha1.PlanVolumesInput) (*v1alpha1.PlanVolumesResult, error) {
	run, plan, err := cluster.StartWithPlan(ctx, a.Locations, a.Log, in.Backup, in.Location)
	if err != nil {
		return nil, err
	}
	defer run.End()
	res := &v1alpha1.PlanVolumesResult{Volumes: []v1alpha1.Volume{}}
	claimsPlanned, podsPlanned := plan.Plans("persistentvolumeclaims"), plan.Plans("pods")
	if !claimsPlanned && !podsPlanned {
		return res, nil
	}
	kc, dyn, err := a.asCaller(in.ActingAs)
	if err != nil {
		return nil, err
	}
	policies, err := a.volumePolicies(ctx, dyn, plan.Spec)
	if err != nil {
		return nil, err
	}
	var claimWarnings []claimWarning
	if claimsPlanned && plan.Spec.SnapshotsVolumes() {
		if claimWarnings, err = a.planSnapshots(ctx, run, kc, *plan, in.ActingAs, policies, res); err != nil {
			return nil, err
		}
	}
	sel := &podVolumeSelector{copyAll: plan.Spec.CopiesAllPodVolumes(), policies: policies, snapshotted: map[string]bool{},
		claims: kc, volumes: a.boundVolume, copied: map[string]bool{}}
	for _, v := range res.Volumes {
		sel.snapshotted[v.Key()] = true
	}
	if podsPlanned {
		if err := plan.EachSelectedPod(ctx, kc, in.ActingAs != nil, func(pod *corev1.Pod) error { return sel.pod(ctx, pod) }); err != nil {
			return nil, err
		}
		res.PodVolumes = sel.selected
	}
	var warnings []string
	for _, w := range claimWarnings {
		if !sel.copied[w.claim] {
			warnings = append(warnings, w.text)
		}
	}
	warnings = append(warnings, sel.allWarnings()...)
	tr := cluster.TypeResult{Resource: "persistentvolumeclaims", Warnings: warnings}
	if err := cluster.StoreTypeResult(ctx, run, run.Keys.TypeResult(volumeResultsKey), tr); err != nil {
		return nil, err
	}
	res.Warnings = len(warnings)
	run.Log.Info("Planned volumes", zap.Int("snapshots", len(res.Volumes)), zap.Int("podVolumes", len(res.PodVolumes)),
		zap.Int("warnings", len(warnings)))
	return res, nil
}

// claimWarning says why a claim's volume is not snapshotted; claim is
// its key, "" for a warning about many.
type claimWarning struct{ claim, text string }

// planSnapshots puts the volumes of the selected claims it snapshots in
// res, and says why each other claim's is not.
func (a *Activities) planSnapshots(ctx context.Context, run *runlog.Run, kc kubernetes.Interface, plan cluster.StoredPlan,
	id *v1alpha1.Identity, policies *volumepolicy.Policies, res *v1alpha1.PlanVolumesResult) ([]claimWarning, error) {
	claims, unlisted, err := a.selectedClaims(ctx, kc, plan, id)
	if err != nil {
		return nil, err
	}
	classes := &classChooser{a: a}
	var warnings []claimWarning
	for _, w := range unlisted {
		warnings = append(warnings, claimWarning{text: w})
		run.Log.Warn("Claims not snapshotted", zap.String("reason", w))
	}
	for i, c := range claims {
		activity.RecordHeartbeat(ctx, i)
		key := c.Namespace + "/" + c.Name
		pv, err := a.boundVolume(ctx, c)
		if err != nil {
			return nil, err
		}
		if warning := policyLeavesOut(policies, c, pv); warning != "" {
			warnings = append(warnings, claimWarning{claim: key, text: warning})
			run.Log.Info("Volume left out of snapshots by a volume policy", zap.String("claim", key), zap.String("reason", warning))
			continue
		}
		v, warning, err := a.volumeOf(ctx, c, pv, classes)
		switch {
		case err != nil:
			return nil, err
		case warning != "":
			warnings = append(warnings, claimWarning{claim: key, text: warning})
			run.Log.Warn("Claim not snapshotted", zap.String("claim", key), zap.String("reason", warning))
		default:
			res.Volumes = append(res.Volumes, v)
		}
	}
	return warnings, nil
}

// selectedClaims lists the claims the backup's filters select, sorted by
// namespace and name, as the run's caller: a namespace whose claims the
// caller may not list gets no snapshots, and a warning (unlisted) says so.
func (a *Activities) selectedClaims(ctx context.Context, kc kubernetes.Interface, plan cluster.StoredPlan, id *v1alpha1.Identity) (
	claims []corev1.PersistentVolumeClaim, unlisted []string, err error) {
	labels, globs, namespaces, err := plan.Selection()
	if err != nil {
		return nil, nil, err
	}
	var out []corev1.PersistentVolumeClaim
	for _, ns := range namespaces {
		list, err := kc.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) && id != nil {
			unlisted = append(unlisted, fmt.Sprintf("%s may not list persistentvolumeclaims in %s: no volume there is snapshotted (%v)",
				id.Username, namespaceName(ns), err))
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("list persistentvolumeclaims: %w", err)
		}
		for _, c := range list.Items {
			// A claim an exclusion label keeps out of the backup gets no
			// snapshot either.
			if globs.Match(c.Namespace) && labels.Match(c.Labels) && filter.ExcludedBy(c.Labels) == "" {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, unlisted, nil
}

// asCaller returns the clients that read what a run's caller names (its
// claims, its volume policies): the worker's own when id is nil.
func (a *Activities) asCaller(id *v1alpha1.Identity) (kubernetes.Interface, dynamic.Interface, error) {
	if id == nil {
		return a.Kube, a.Dynamic, nil
	}
	cfg, err := actas.Config(a.Config, id)
	if err != nil {
		return nil, nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client as %s: %w", id.Username, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamic client as %s: %w", id.Username, err)
	}
	return kc, dyn, nil
}

func namespaceName(ns string) string {
	if ns == "" {
		return "any namespace"
	}
	return "namespace " + ns
}

// boundVolume reads the volume a claim names; nil when it names none or
// that volume does not exist. It reads with the worker's rights, as the
// CSI snapshotter does for a VolumeSnapshot of a claim: the claim, which
// the caller may read, names the volume, and a namespace's owner seldom
// may read PersistentVolumes.
func (a *Activities) boundVolume(ctx context.Context, c corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	if c.Spec.VolumeName == "" {
		return nil, nil
	}
	pv, err := a.Kube.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get persistentvolume %s: %w", c.Spec.VolumeName, err)
	}
	return pv, nil
}

// volumeOf returns the volume to snapshot for a claim bound to pv (nil
// when it does not exist), or why it is not snapshotted.
func (a *Activities) volumeOf(ctx context.Context, c corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume,
	classes *classChooser) (v1alpha1.Volume, string, error) {
	key := c.Namespace + "/" + c.Name
	if c.Status.Phase != corev1.ClaimBound || c.Spec.VolumeName == "" {
		return v1alpha1.Volume{}, fmt.Sprintf("claim %s is not bound to a volume (phase %s): its volume is not snapshotted", key, c.Status.Phase), nil
	}
	if pv == nil {
		return v1alpha1.Volume{}, fmt.Sprintf("claim %s is bound to volume %s, which does not exist: not snapshotted", key, c.Spec.VolumeName), nil
	}
	if pv.Spec.CSI == nil {
		return v1alpha1.Volume{}, fmt.Sprintf("claim %s is bound to volume %s, which is not a CSI volume: not snapshotted", key, pv.Name), nil
	}
	driver := pv.Spec.CSI.Driver
	if err := classes.requireAPI(ctx, key, pv.Name, driver); err != nil {
		return v1alpha1.Volume{}, "", err
	}
	class, warning := classes.choose(c, driver)
	if warning != "" {
		return v1alpha1.Volume{}, warning, nil
	}
	storageClass := pv.Spec.StorageClassName
	if c.Spec.StorageClassName != nil {
		storageClass = *c.Spec.StorageClassName
	}
	return v1alpha1.Volume{Namespace: c.Namespace, Claim: c.Name, PersistentVolume: pv.Name, Driver: driver,
		VolumeHandle: pv.Spec.CSI.VolumeHandle, SnapshotClass: class, StorageClass: storageClass}, "", nil
}
