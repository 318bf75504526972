package exposer

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// MountPath is where a data mover pod mounts its volume. Its parent is
// an emptyDir: a kopia restore removes a placeholder beside the target
// (volume.kopia-entry), which a read-only root would refuse.
const MountPath = "/mnt/volume"

// MarkerMountPath is where a pod volume restore's data mover mounts the
// restored pod's marker directory.
const MarkerMountPath = "/mnt/markers"

// PodConfig is how data mover pods look.
type PodConfig struct {
	Image           string
	ImagePullPolicy corev1.PullPolicy
	ServiceAccount  string
	Resources       corev1.ResourceRequirements
	NodeSelector    map[string]string
	Tolerations     []corev1.Toleration
	SecurityContext *corev1.PodSecurityContext
	// Args follow "cairn datamover": the Temporal connection flags.
	Args []string
	// PasswordSecret holds the repository password under PasswordKey, in
	// the data mover namespace.
	PasswordSecret, PasswordKey string
	// HostNetwork runs data movers in the node's network namespace, where
	// a Temporal on the node's loopback is reachable (the sandbox).
	HostNetwork bool
	// HostPaths are node directories mounted at the same path: a file://
	// location every node has.
	HostPaths []string
	// Secrets reach Temporal and the location.
	Secrets PodSecrets
}

// Pod starts each data mover as a pod that mounts the exposed claim. It
// does not wait for the pod: the data mover's first poll of its task
// queue is the sign it runs, and the prepare timeout bounds the wait.
type Pod struct {
	*Volumes
	Config PodConfig
}

// Node is the node the backed-up volume is pinned to (its node affinity
// on kubernetes.io/hostname), where a clone of it lands too; "" when the
// volume is not pinned.
func (p *Pod) Node(ctx context.Context, t Target) (string, error) {
	if t.Mode.OnNode() {
		return t.Node, nil
	}
	if t.Mode != Backup {
		return "", nil
	}
	claim, err := p.Kube.CoreV1().PersistentVolumeClaims(t.SourceNamespace).Get(ctx, t.SourceClaim, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && claim.Spec.VolumeName == "") {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("claim %s/%s: %w", t.SourceNamespace, t.SourceClaim, err)
	}
	pv, err := p.Kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("volume %s: %w", claim.Spec.VolumeName, err)
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return "", nil
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0], nil
			}
		}
	}
	return "", nil
}

// Expose creates the claim and the attempt's pod; a file-system backup
// only the pod, on the node of the pod whose volume it reads.
func (p *Pod) Expose(ctx context.Context, t Target, _ func(string)) (*Started, error) {
	claim := t.Namespace + "/" + t.Name()
	if t.Mode.OnNode() {
		if err := p.CheckPod(ctx, t); err != nil {
			return nil, err
		}
		if err := p.ensureNamespace(ctx, t.Namespace); err != nil {
			return nil, err
		}
		claim = ""
	} else if _, err := p.EnsureClaim(ctx, t); err != nil {
		return nil, err
	}
	if err := p.copySecrets(ctx, t.Namespace); err != nil {
		return nil, err
	}
	pods := p.Kube.CoreV1().Pods(t.Namespace)
	pod, err := pods.Create(ctx, p.PodFor(t), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		pod, err = pods.Get(ctx, t.moverName(), metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("data mover pod %s/%s: %w", t.Namespace, t.moverName(), err)
	}
	return &Started{Claim: claim, DataMover: "pod " + t.Namespace + "/" + pod.Name, Node: pod.Spec.NodeName}, nil
}

// PodFor is the data mover pod of the target's attempt. It runs
// restricted: no service account token, no privilege escalation, a
// read-only root with an emptyDir for /tmp (where kopia keeps its
// files), seccomp, and no capability a non-root user does not need.
//
// A file-system backup's data mover is the one pod cairn runs with a
// host path of its own: it mounts exactly the one volume directory of
// the pod it copies, read-only, and runs as root with only the
// capabilities to read every file there (the pod's files belong to its
// own users). It runs on that pod's node by name, past the scheduler, as
// the pod's volume is nowhere else.
func (p *Pod) PodFor(t Target) *corev1.Pod {
	c := p.Config
	readOnly := t.Mode != Restore && t.Mode != FSRestore
	dir := corev1.HostPathDirectory
	data := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: t.Name(), ReadOnly: readOnly}}
	capabilities := rootCapabilities
	switch t.Mode {
	case FSBackup:
		data = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.HostDir, Type: &dir}}
		c.SecurityContext, capabilities = asRoot(c.SecurityContext), readCapabilities
	case FSRestore:
		// Writing back every file as its owner had it takes root's
		// file capabilities, as for a restore into a claim.
		data = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.HostDir, Type: &dir}}
		c.SecurityContext = asRoot(c.SecurityContext)
	}
	args := append([]string{"datamover", "--task-queue", t.TaskQueue, "--path", MountPath}, c.Args...)
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: MountPath, ReadOnly: readOnly},
		{Name: "tmp", MountPath: "/tmp"}, {Name: "mnt", MountPath: path.Dir(MountPath)}}
	volumes := []corev1.Volume{{Name: "data", VolumeSource: data}, emptyDir("tmp"), emptyDir("mnt")}
	if t.Mode == FSRestore {
		args = append(args, "--marker-dir", MarkerMountPath)
		mounts = append(mounts, corev1.VolumeMount{Name: "markers", MountPath: MarkerMountPath})
		volumes = append(volumes, corev1.Volume{Name: "markers",
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.MarkerDir, Type: &dir}}})
	}
	for i, p := range c.HostPaths {
		name := fmt.Sprintf("host-%d", i)
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: p})
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &dir}}})
	}
	if s := c.Secrets; s.TemporalTLS != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: "temporal-tls", MountPath: s.TemporalTLSDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "temporal-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.TemporalTLS}}})
	}
	if s := c.Secrets; s.EncryptionKey != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: "encryption-key", MountPath: s.EncryptionKeyDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "encryption-key", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s.EncryptionKey}}})
	}
	for i, secret := range slices.Sorted(maps.Keys(c.Secrets.Mounts)) {
		name := fmt.Sprintf("secret-%d", i)
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: c.Secrets.Mounts[secret], ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
	}
	env, envFrom := c.env()
	automount := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: t.moverName(), Namespace: t.Namespace, Labels: labels(t)},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			ServiceAccountName:           c.ServiceAccount,
			AutomountServiceAccountToken: &automount,
			NodeSelector:                 c.NodeSelector,
			Tolerations:                  c.Tolerations,
			SecurityContext:              c.podSecurityContext(),
			HostNetwork:                  c.HostNetwork,
			Containers: []corev1.Container{{
				Name: "datamover", Image: c.Image, ImagePullPolicy: c.ImagePullPolicy,
				Command: []string{"/cairn"}, Args: args, Env: env, EnvFrom: envFrom, Resources: c.Resources, VolumeMounts: mounts,
				SecurityContext: c.containerSecurityContext(capabilities),
			}},
			Volumes: volumes,
		},
	}
	if c.HostNetwork {
		pod.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	if t.Mode.OnNode() {
		pod.Spec.NodeName = t.Node
	}
	return pod
}

// asRoot is sc running as root, the rest of it kept.
func asRoot(sc *corev1.PodSecurityContext) *corev1.PodSecurityContext {
	root := int64(0)
	out := &corev1.PodSecurityContext{}
	if sc != nil {
		out = sc.DeepCopy()
	}
	out.RunAsUser, out.RunAsNonRoot = &root, nil
	return out
}

func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// env is the password and the Temporal API key from their Secrets, never
// inline, and the location's credentials.
func (c PodConfig) env() ([]corev1.EnvVar, []corev1.EnvFromSource) {
	var env []corev1.EnvVar
	fromSecret := func(name, secret, key string) {
		env = append(env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key},
		}})
	}
	if c.PasswordSecret != "" {
		fromSecret("CAIRN_REPOSITORY_PASSWORD", c.PasswordSecret, c.PasswordKey)
	}
	if c.Secrets.APIKey != "" {
		fromSecret("CAIRN_API_KEY", c.Secrets.APIKey, c.Secrets.APIKeyKey)
	}
	var envFrom []corev1.EnvFromSource
	for _, name := range c.Secrets.Env {
		envFrom = append(envFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	}
	return env, envFrom
}

// runsAsRoot says whether the pods run as root, which is asked for to
// read files only root may read and to restore owners.
func (c PodConfig) runsAsRoot() bool {
	return c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil && *c.SecurityContext.RunAsUser == 0
}

func (c PodConfig) podSecurityContext() *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{}
	if c.SecurityContext != nil {
		sc = c.SecurityContext.DeepCopy()
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	if !c.runsAsRoot() && sc.RunAsNonRoot == nil {
		nonRoot := true
		sc.RunAsNonRoot = &nonRoot
	}
	return sc
}

// rootCapabilities are what root keeps: reading and writing every file
// of the volume, and restoring owners and modes. Without them root
// could read no more than any other user.
var rootCapabilities = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID"}

// readCapabilities are all a file-system backup's root needs: reading
// every file and directory of the volume, whoever owns it.
var readCapabilities = []corev1.Capability{"DAC_READ_SEARCH"}

// containerSecurityContext drops every capability; a root data mover
// keeps rootCaps.
func (c PodConfig) containerSecurityContext(rootCaps []corev1.Capability) *corev1.SecurityContext {
	no, yes := false, true
	caps := &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	if c.runsAsRoot() {
		caps.Add = rootCaps
	}
	return &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes, Capabilities: caps}
}

// Diagnose reads the claim and the pod's status: unschedulable, image
// pull errors, a crash.
func (p *Pod) Diagnose(ctx context.Context, t Target) string {
	var parts []string
	if t.Mode.OnNode() {
		if err := p.CheckPod(ctx, t); err != nil {
			parts = append(parts, err.Error())
		}
	} else if state := p.ClaimState(ctx, t); state != "" {
		parts = append(parts, state)
	}
	pod, err := p.Kube.CoreV1().Pods(t.Namespace).Get(ctx, t.moverName(), metav1.GetOptions{})
	if err != nil {
		return strings.Join(append(parts, fmt.Sprintf("pod %s/%s: %v", t.Namespace, t.moverName(), err)), "; ")
	}
	msg := fmt.Sprintf("pod %s/%s is %s", pod.Namespace, pod.Name, pod.Status.Phase)
	for _, cond := range pod.Status.Conditions {
		if cond.Status != corev1.ConditionTrue && cond.Message != "" {
			msg += fmt.Sprintf(", %s: %s %s", cond.Type, cond.Reason, cond.Message)
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			msg += fmt.Sprintf(", container %s waiting: %s %s", cs.Name, w.Reason, w.Message)
		}
		if term := cs.State.Terminated; term != nil {
			msg += fmt.Sprintf(", container %s exited %d: %s %s", cs.Name, term.ExitCode, term.Reason, term.Message)
		}
	}
	return strings.Join(append(parts, msg), "; ")
}

// Cleanup deletes the target's pods, claim and snapshot clone.
func (p *Pod) Cleanup(ctx context.Context, t Target, progress func(string)) error {
	if err := p.deletePods(ctx, t, progress); err != nil {
		return err
	}
	if t.Mode.OnNode() {
		return nil
	}
	return p.DeleteAll(ctx, t, progress)
}

// HandOver deletes the target's pods (the claim cannot go while a pod
// uses it) and hands its volume over.
func (p *Pod) HandOver(ctx context.Context, t Target, ref ClaimRef, progress func(string)) (string, error) {
	if err := p.deletePods(ctx, t, progress); err != nil {
		return "", err
	}
	return p.Volumes.HandOver(ctx, t, ref, progress)
}

// deletePods deletes the target's data mover pods and waits until they
// are gone.
func (p *Pod) deletePods(ctx context.Context, t Target, progress func(string)) error {
	pods := p.Kube.CoreV1().Pods(t.Namespace)
	sel := metav1.ListOptions{LabelSelector: v1alpha1.LabelDataMover + "=" + t.Name()}
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete data mover pods of %s: %w", t.Name(), err)
	}
	err := wait.PollUntilContextCancel(ctx, p.poll(), true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, sel)
		if err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			progress(fmt.Sprintf("waiting for %d data mover pods of %s to go", len(list.Items), t.Name()))
		}
		return len(list.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("data mover pods of %s: %w", t.Name(), err)
	}
	return nil
}
