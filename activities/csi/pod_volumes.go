package csi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/filter"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/volumepolicy"
)

// maxPodVolumeWarnings bounds the warnings about pod volumes one backup
// records; one more says how many were left out.
const maxPodVolumeWarnings = 100

// selectedByDefault is what selects a volume of a backup with
// defaultVolumesToFsBackup.
const selectedByDefault = "defaultVolumesToFsBackup"

// podVolumeSelector decides, pod by pod, which volumes a backup copies
// from the pod's directory on its node, with Velero's rules: a volume
// policy first, then the pod's backup-volumes annotation (opt-in), then
// defaultVolumesToFsBackup less the backup-volumes-excludes annotation
// (opt-out). A volume whose claim is snapshotted is never copied too, a
// claim mounted by several pods is copied once, and Secret, ConfigMap,
// projected, downward API and hostPath volumes never are.
type podVolumeSelector struct {
	copyAll     bool
	policies    *volumepolicy.Policies
	snapshotted map[string]bool // claim keys
	// claims reads a claim as the run's caller; volumes a bound volume
	// with the worker's rights.
	claims  kubernetes.Interface
	volumes func(ctx context.Context, c corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error)

	selected []v1alpha1.Volume
	copied   map[string]bool // claim keys copied from a pod
	warnings []string
	more     int
}

// wanted is a volume of a pod that is to be copied, and what asked.
type wanted struct {
	volume corev1.Volume
	by     string
}

// pod adds the volumes of pod to copy, and warns of those asked for
// that cannot be.
func (s *podVolumeSelector) pod(ctx context.Context, pod *corev1.Pod) error {
	if filter.ExcludedBy(pod.Labels) != "" {
		return nil
	}
	want, err := s.wanted(ctx, pod)
	if err != nil || len(want) == 0 {
		return err
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Spec.NodeName == "" {
		names := make([]string, len(want))
		for i, w := range want {
			names[i] = w.volume.Name
		}
		s.warn(fmt.Sprintf("pod %s/%s is %s, not Running: its volumes %s are not copied", pod.Namespace, pod.Name,
			podPhase(pod), strings.Join(names, ", ")))
		return nil
	}
	for _, w := range want {
		v, why, err := s.volumeOf(ctx, pod, w)
		if errors.Is(err, errClaimForbidden) {
			why, err = err.Error(), nil
		}
		switch {
		case err != nil:
			return err
		case why != "":
			s.warn(fmt.Sprintf("pod %s/%s: volume %s is not copied: %s", pod.Namespace, pod.Name, w.volume.Name, why))
		case v.Claim != "" && s.copied[pod.Namespace+"/"+v.Claim]:
			// Another pod's copy of the claim holds its data.
		default:
			if v.Claim != "" {
				s.copied[pod.Namespace+"/"+v.Claim] = true
			}
			s.selected = append(s.selected, v)
		}
	}
	return nil
}

// wanted lists the volumes of pod the rules ask to copy, warning of
// names its annotation gives that the pod lacks.
func (s *podVolumeSelector) wanted(ctx context.Context, pod *corev1.Pod) ([]wanted, error) {
	optIn := annotatedVolumes(pod, v1alpha1.FSBackupAnnotations)
	optOut := annotatedVolumes(pod, v1alpha1.FSBackupExcludeAnnotations)
	has := map[string]bool{}
	var want []wanted
	for _, vol := range pod.Spec.Volumes {
		has[vol.Name] = true
		claim := claimOf(pod, vol)
		if claim != "" && s.snapshotted[pod.Namespace+"/"+claim] {
			continue
		}
		if never := neverCopied(vol); never != "" {
			if by, ok := optIn[vol.Name]; ok {
				s.warn(fmt.Sprintf("pod %s/%s: %s names volume %s, a %s volume, which is never copied", pod.Namespace, pod.Name, by, vol.Name, never))
			}
			continue
		}
		action, err := s.policyFor(ctx, pod, vol, claim)
		if errors.Is(err, errClaimForbidden) {
			// volumeOf says so, if the volume is wanted.
			action, err = volumepolicy.Action{}, nil
		}
		if err != nil {
			return nil, err
		}
		switch {
		case action.Type == volumepolicy.FSBackup:
			want = append(want, wanted{volume: vol, by: action.Policy})
		case action.Type == volumepolicy.Skip:
			if by := optIn[vol.Name]; by != "" {
				s.warn(fmt.Sprintf("pod %s/%s: %s asks to copy volume %s, but %s skips it", pod.Namespace, pod.Name, by, vol.Name, action.Policy))
			}
		case optIn[vol.Name] != "":
			want = append(want, wanted{volume: vol, by: optIn[vol.Name]})
		case s.copyAll && optOut[vol.Name] == "":
			want = append(want, wanted{volume: vol, by: selectedByDefault})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(optIn)) {
		if !has[name] {
			s.warn(fmt.Sprintf("pod %s/%s: %s names volume %s, which the pod does not have", pod.Namespace, pod.Name, optIn[name], name))
		}
	}
	return want, nil
}

// policyFor is what the volume policies say of a pod volume; the zero
// Action when none holds.
func (s *podVolumeSelector) policyFor(ctx context.Context, pod *corev1.Pod, vol corev1.Volume, claim string) (volumepolicy.Action, error) {
	if s.policies == nil {
		return volumepolicy.Action{}, nil
	}
	pv := volumepolicy.Volume{Type: sourceKind(vol.VolumeSource)}
	if vol.NFS != nil {
		pv.NFSServer, pv.NFSPath = vol.NFS.Server, vol.NFS.Path
	}
	if vol.CSI != nil {
		pv.CSIDriver, pv.VolumeAttributes = vol.CSI.Driver, vol.CSI.VolumeAttributes
	}
	if claim != "" {
		c, bound, err := s.claimAndVolume(ctx, pod.Namespace, claim)
		if err != nil || c == nil {
			return volumepolicy.Action{}, err
		}
		pv = policyVolume(*c, bound)
	}
	action, _ := s.policies.Match(pv)
	return action, nil
}

// volumeOf is the record of a wanted volume of a running pod, or why it
// cannot be copied.
func (s *podVolumeSelector) volumeOf(ctx context.Context, pod *corev1.Pod, w wanted) (v1alpha1.Volume, string, error) {
	vol := w.volume
	v := v1alpha1.Volume{Namespace: pod.Namespace, PodVolume: &v1alpha1.PodVolume{
		Pod: pod.Name, UID: string(pod.UID), Volume: vol.Name, Node: pod.Spec.NodeName,
		Source: sourceKind(vol.VolumeSource), SelectedBy: w.by,
	}}
	claim := claimOf(pod, vol)
	switch {
	case vol.EmptyDir != nil || vol.NFS != nil || vol.CSI != nil:
		v.PodVolume.Dir = kube.InlineVolumeDir(vol)
		if vol.CSI != nil {
			v.Driver = vol.CSI.Driver
		}
	case claim != "":
		v.Claim = claim
		c, pv, err := s.claimAndVolume(ctx, pod.Namespace, v.Claim)
		switch {
		case err != nil:
			return v, "", err
		case c == nil:
			return v, "claim " + v.Claim + " does not exist", nil
		case pv == nil:
			return v, fmt.Sprintf("claim %s is not bound to a volume (phase %s)", v.Claim, c.Status.Phase), nil
		}
		v.PersistentVolume, v.StorageClass = pv.Name, pv.Spec.StorageClassName
		dir, why := kube.ClaimVolumeDir(pv)
		if why != "" {
			return v, why, nil
		}
		v.PodVolume.Dir = dir
		if pv.Spec.CSI != nil {
			v.Driver = pv.Spec.CSI.Driver
		}
	default:
		return v, "cairn cannot copy a " + v.PodVolume.Source + " volume from its pod", nil
	}
	return v, "", nil
}

// errClaimForbidden: the run's caller may not read a pod's claim, so
// the pod's volume is not copied.
var errClaimForbidden = errors.New("the backup's caller may not read the claim")

// claimAndVolume reads a claim as the run's caller and its bound volume;
// nil when either does not exist.
func (s *podVolumeSelector) claimAndVolume(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume, error) {
	c, err := s.claims.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, nil
	case apierrors.IsForbidden(err):
		return nil, nil, fmt.Errorf("%w: %w", errClaimForbidden, err)
	case err != nil:
		return nil, nil, fmt.Errorf("get persistentvolumeclaim %s/%s: %w", namespace, name, err)
	}
	pv, err := s.volumes(ctx, *c)
	return c, pv, err
}

func (s *podVolumeSelector) warn(w string) {
	if len(s.warnings) < maxPodVolumeWarnings {
		s.warnings = append(s.warnings, w)
	} else {
		s.more++
	}
}

// allWarnings are the warnings, the ones left out counted in a last one.
func (s *podVolumeSelector) allWarnings() []string {
	if s.more == 0 {
		return s.warnings
	}
	return append(s.warnings, fmt.Sprintf("and %d more warnings about pod volumes", s.more))
}

// annotatedVolumes maps each volume name the annotations list to the
// first annotation that lists it.
func annotatedVolumes(pod *corev1.Pod, keys []string) map[string]string {
	names := map[string]string{}
	for _, key := range keys {
		for _, name := range strings.Split(pod.Annotations[key], ",") {
			if name = strings.TrimSpace(name); name != "" && names[name] == "" {
				names[name] = key
			}
		}
	}
	return names
}

// claimOf is the claim behind a pod volume: its own, or the one a
// generic ephemeral volume makes (<pod>-<volume>); "" for none.
func claimOf(pod *corev1.Pod, vol corev1.Volume) string {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		return pod.Name + "-" + vol.Name
	}
	return ""
}

// neverCopied names the kind of a volume no file-system backup takes:
// its content is the cluster's objects (in the backup already) or the
// node's; "" for others.
func neverCopied(vol corev1.Volume) string {
	switch {
	case vol.HostPath != nil, vol.Secret != nil, vol.ConfigMap != nil, vol.Projected != nil, vol.DownwardAPI != nil:
		return sourceKind(vol.VolumeSource)
	}
	return ""
}

// sourceKind is the field name of a volume's source, as a pod's spec
// spells it.
func sourceKind(src corev1.VolumeSource) string {
	switch {
	case src.EmptyDir != nil:
		return "emptyDir"
	case src.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case src.Ephemeral != nil:
		return "ephemeral"
	case src.HostPath != nil:
		return "hostPath"
	case src.Secret != nil:
		return "secret"
	case src.ConfigMap != nil:
		return "configMap"
	case src.Projected != nil:
		return "projected"
	case src.DownwardAPI != nil:
		return "downwardAPI"
	case src.NFS != nil:
		return "nfs"
	case src.CSI != nil:
		return "csi"
	case src.Image != nil:
		return "image"
	}
	return "other"
}

func podPhase(pod *corev1.Pod) string {
	if pod.Status.Phase == corev1.PodRunning {
		return "Running on no node"
	}
	if pod.Status.Phase == "" {
		return "Pending"
	}
	return string(pod.Status.Phase)
}
