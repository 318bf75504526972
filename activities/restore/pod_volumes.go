package restore

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// RestoreWait is the image of the init container that holds a restored
// pod until its volumes' copies are written back: cairn's own, which
// the data movers run too.
type RestoreWait struct {
	Image      string
	PullPolicy corev1.PullPolicy
}

// restoreWaitUser runs the init container: any user but root, since it
// only reads the markers.
const restoreWaitUser = 65532

// podWithCopies is a backed-up pod whose volumes the backup copied.
func podWithCopies(idx *backupIndex, namespace, name string) []v1alpha1.VolumeRecord {
	return idx.podCopies[namespace+"/"+name]
}

// addRestoreWait makes a restored pod wait for its volumes' copies: an
// init container, first of all (so init hooks see the data), watches an
// emptyDir of markers the data movers write, and the pod is annotated
// with the restore. It returns the volumes to write back, and warnings
// for copies the pod (after its preparation) has no volume for.
func addRestoreWait(obj *unstructured.Unstructured, spec v1alpha1.RestoreSpec, sourceNamespace string,
	copies []v1alpha1.VolumeRecord, wait RestoreWait) ([]v1alpha1.RestoreVolume, []string, error) {
	if wait.Image == "" {
		return nil, []string{fmt.Sprintf("pod %s/%s: the worker has no data mover image for its restore-wait init container: "+
			"its %d volume copies are not written back", obj.GetNamespace(), obj.GetName(), len(copies))}, nil
	}
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &pod); err != nil {
		return nil, nil, fmt.Errorf("not a pod: %w", err)
	}
	var vols []v1alpha1.RestoreVolume
	var warnings []string
	var names []string
	for _, rec := range copies {
		pv := rec.Volume.PodVolume
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == pv.Volume })
		if i < 0 {
			warnings = append(warnings, fmt.Sprintf("pod %s/%s has no volume %s any more: its copy (kopia snapshot %s) is not written back",
				obj.GetNamespace(), obj.GetName(), pv.Volume, rec.Upload.SnapshotID))
			continue
		}
		v := v1alpha1.RestoreVolume{
			ID: v1alpha1.PodVolumeRestoreID(obj.GetNamespace(), obj.GetName(), pv.Volume), Namespace: obj.GetNamespace(),
			Claim: rec.Volume.Claim, SnapshotID: rec.Upload.SnapshotID, Bytes: rec.Upload.Bytes, Files: rec.Upload.Files,
			PodVolume: &v1alpha1.PodVolume{Pod: obj.GetName(), Volume: pv.Volume, Source: pv.Source, SelectedBy: pv.SelectedBy,
				Consistency: pv.Consistency},
			DataName: rec.Volume.DataName(),
		}
		if sourceNamespace != obj.GetNamespace() {
			v.SourceNamespace = sourceNamespace
		}
		vols = append(vols, v)
		names = append(names, pv.Volume)
	}
	if len(vols) == 0 {
		return nil, warnings, nil
	}
	init, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(restoreWaitContainer(spec.Name, names, wait)))
	if err != nil {
		return nil, nil, fmt.Errorf("restore-wait init container: %w", err)
	}
	inits, _, _ := unstructured.NestedSlice(obj.Object, "spec", "initContainers")
	if err := unstructured.SetNestedSlice(obj.Object, append([]any{init}, inits...), "spec", "initContainers"); err != nil {
		return nil, nil, fmt.Errorf("restore-wait init container: %w", err)
	}
	volumes, _, _ := unstructured.NestedSlice(obj.Object, "spec", "volumes")
	for _, name := range []string{v1alpha1.RestoreWaitVolume, v1alpha1.RestoreWaitTmpVolume} {
		v, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}})
		if err != nil {
			return nil, nil, fmt.Errorf("restore-wait volume: %w", err)
		}
		volumes = append(volumes, v)
	}
	if err := unstructured.SetNestedSlice(obj.Object, volumes, "spec", "volumes"); err != nil {
		return nil, nil, fmt.Errorf("restore-wait volumes: %w", err)
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.RestoreWaitAnnotation] = spec.Name
	obj.SetAnnotations(annotations)
	return vols, warnings, nil
}

// restoreWaitContainer waits for the markers of volumes, as restricted
// as a container gets: it reads one emptyDir and writes nothing.
func restoreWaitContainer(restore string, volumes []string, wait RestoreWait) corev1.Container {
	return corev1.Container{
		Name: v1alpha1.RestoreWaitContainer, Image: wait.Image, ImagePullPolicy: wait.PullPolicy,
		Command: []string{"/cairn"},
		Args: []string{"pod-volume-wait", "--restore", restore, "--dir", v1alpha1.RestoreWaitDir,
			"--volumes", strings.Join(volumes, ",")},
		VolumeMounts: []corev1.VolumeMount{{Name: v1alpha1.RestoreWaitVolume, MountPath: v1alpha1.RestoreWaitDir, ReadOnly: true},
			{Name: v1alpha1.RestoreWaitTmpVolume, MountPath: "/tmp"}},
		// Why the data will not come, in the pod's status as well as its
		// log.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(restoreWaitUser)), RunAsGroup: ptr.To(int64(restoreWaitUser)),
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// maxPodVolumeWarnings bounds the warnings about pod volume copies a
// restore records.
const maxPodVolumeWarnings = 100

func (p *restorePlan) addPodVolumeWarnings(warnings []string) {
	for _, w := range warnings {
		if len(p.podVolumeWarnings) < maxPodVolumeWarnings {
			p.podVolumeWarnings = append(p.podVolumeWarnings, w)
		}
	}
}
