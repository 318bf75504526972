package csi

import (
	"context"
	"fmt"
	"sort"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v6/apis/volumesnapshot/v1"
	"go.temporal.io/sdk/temporal"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/objects"
)

// snapshotGroupVersion is the API the snapshots are made through.
const snapshotGroupVersion = objects.SnapshotGroup + "/v1"

// annotationDefaultClass marks a driver's default VolumeSnapshotClass.
const annotationDefaultClass = "snapshot.storage.kubernetes.io/is-default-class"

// classChooser picks each claim's VolumeSnapshotClass, reading the API
// and the classes once per plan.
type classChooser struct {
	a        *Activities
	checked  bool
	byDriver map[string][]snapv1.VolumeSnapshotClass
}

// requireAPI fails, for good, when a CSI volume is to be snapshotted in a
// cluster that does not serve the snapshot API.
func (c *classChooser) requireAPI(ctx context.Context, claim, pv, driver string) error {
	if c.checked {
		return nil
	}
	resources, err := c.a.Discovery.ServerResourcesForGroupVersion(snapshotGroupVersion)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("discover %s: %w", snapshotGroupVersion, err)
	}
	served := false
	if resources != nil {
		for _, r := range resources.APIResources {
			served = served || r.Name == "volumesnapshots"
		}
	}
	if !served {
		msg := fmt.Sprintf("claim %s is bound to CSI volume %s (driver %s), but the cluster serves no %s VolumeSnapshot API: "+
			"install the VolumeSnapshot CRDs and the snapshot controller, or back up with snapshotVolumes: false (--snapshot-volumes=false)",
			claim, pv, driver, snapshotGroupVersion)
		return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeSnapshotAPIMissing, nil)
	}
	list, err := c.a.Snapshots.SnapshotV1().VolumeSnapshotClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list volumesnapshotclasses: %w", err)
	}
	c.byDriver = map[string][]snapv1.VolumeSnapshotClass{}
	for _, cl := range list.Items {
		c.byDriver[cl.Driver] = append(c.byDriver[cl.Driver], cl)
	}
	c.checked = true
	return nil
}

// choose returns the class for a claim: the one its cairn.io/snapshot-class
// annotation names, else the driver's class labelled
// cairn.io/snapshot-class=true, else the driver's default class. A claim
// with none is a warning.
func (c *classChooser) choose(claim corev1.PersistentVolumeClaim, driver string) (class, warning string) {
	key := claim.Namespace + "/" + claim.Name
	classes := c.byDriver[driver]
	if name := claim.Annotations[v1alpha1.AnnotationSnapshotClass]; name != "" {
		for _, cl := range classes {
			if cl.Name == name {
				return name, ""
			}
		}
		return "", fmt.Sprintf("claim %s asks for VolumeSnapshotClass %q (annotation %s), which does not exist for its CSI driver %s: not snapshotted",
			key, name, v1alpha1.AnnotationSnapshotClass, driver)
	}
	var labelled, defaults []string
	for _, cl := range classes {
		if cl.Labels[v1alpha1.LabelSnapshotClass] == "true" {
			labelled = append(labelled, cl.Name)
		}
		if cl.Annotations[annotationDefaultClass] == "true" {
			defaults = append(defaults, cl.Name)
		}
	}
	sort.Strings(labelled)
	sort.Strings(defaults)
	switch {
	case len(labelled) == 1:
		return labelled[0], ""
	case len(labelled) > 1:
		return "", fmt.Sprintf("claim %s: CSI driver %s has several VolumeSnapshotClasses labelled %s=true (%s): name one with the claim annotation %s; not snapshotted",
			key, driver, v1alpha1.LabelSnapshotClass, strings.Join(labelled, ", "), v1alpha1.AnnotationSnapshotClass)
	case len(defaults) == 1:
		return defaults[0], ""
	case len(defaults) > 1:
		return "", fmt.Sprintf("claim %s: CSI driver %s has several default VolumeSnapshotClasses (%s): label one %s=true; not snapshotted",
			key, driver, strings.Join(defaults, ", "), v1alpha1.LabelSnapshotClass)
	case len(classes) == 0:
		return "", fmt.Sprintf("claim %s is bound to a volume of CSI driver %s, which has no VolumeSnapshotClass: not snapshotted", key, driver)
	}
	return "", fmt.Sprintf("claim %s: CSI driver %s has VolumeSnapshotClasses but none is its default or labelled %s=true: not snapshotted",
		key, driver, v1alpha1.LabelSnapshotClass)
}
