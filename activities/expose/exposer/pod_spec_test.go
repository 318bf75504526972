package exposer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

var specTarget = Target{Owner: "b1", Mode: Backup, Namespace: "movers", SourceNamespace: "app", Snapshot: "snap",
	TaskQueue: "cairn-datamover-0123456789abcdef", Attempt: 1}

func TestDataMoverPodsRunRestricted(t *testing.T) {
	pod := (&Pod{Config: PodConfig{Image: "cairn:test"}}).PodFor(specTarget)
	require.NotNil(t, pod.Spec.AutomountServiceAccountToken)
	assert.False(t, *pod.Spec.AutomountServiceAccountToken, "data movers never talk to the API server")
	sc := pod.Spec.SecurityContext
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
	require.NotNil(t, sc.RunAsNonRoot)
	assert.True(t, *sc.RunAsNonRoot)
	c := pod.Spec.Containers[0].SecurityContext
	assert.False(t, *c.AllowPrivilegeEscalation)
	assert.True(t, *c.ReadOnlyRootFilesystem)
	assert.Equal(t, []corev1.Capability{"ALL"}, c.Capabilities.Drop)
	assert.Empty(t, c.Capabilities.Add)
	assert.Contains(t, pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"}, "kopia writes under /tmp")
	assert.Contains(t, pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "mnt", MountPath: "/mnt"},
		"a restore writes beside the volume's mount")
}

func TestRootDataMoversKeepOnlyTheFileCapabilities(t *testing.T) {
	root := int64(0)
	pod := (&Pod{Config: PodConfig{Image: "cairn:test", SecurityContext: &corev1.PodSecurityContext{RunAsUser: &root}}}).PodFor(specTarget)
	assert.Nil(t, pod.Spec.SecurityContext.RunAsNonRoot)
	assert.Equal(t, int64(0), *pod.Spec.SecurityContext.RunAsUser)
	c := pod.Spec.Containers[0].SecurityContext
	assert.Equal(t, []corev1.Capability{"ALL"}, c.Capabilities.Drop)
	assert.ElementsMatch(t, []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID"}, c.Capabilities.Add)
	assert.False(t, *c.AllowPrivilegeEscalation)
}

func TestDataMoverPodsGetTheConnectionSecrets(t *testing.T) {
	cfg := PodConfig{Image: "cairn:test", PasswordSecret: "repo", PasswordKey: "repository-password",
		Secrets: PodSecrets{TemporalTLS: "temporal-tls", TemporalTLSDir: "/etc/cairn/temporal-tls", APIKey: "temporal-key", APIKeyKey: "api-key",
			Env: []string{"s3-creds"}}}
	pod := (&Pod{Config: cfg}).PodFor(specTarget)
	c := pod.Spec.Containers[0]
	env := map[string]*corev1.SecretKeySelector{}
	for _, e := range c.Env {
		assert.Empty(t, e.Value, "%s is never inline", e.Name)
		env[e.Name] = e.ValueFrom.SecretKeyRef
	}
	assert.Equal(t, "repo", env["CAIRN_REPOSITORY_PASSWORD"].Name)
	assert.Equal(t, "temporal-key", env["CAIRN_API_KEY"].Name)
	assert.Equal(t, "api-key", env["CAIRN_API_KEY"].Key)
	require.Len(t, c.EnvFrom, 1)
	assert.Equal(t, "s3-creds", c.EnvFrom[0].SecretRef.Name)
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "temporal-tls", MountPath: "/etc/cairn/temporal-tls", ReadOnly: true})
	var tlsVolume *corev1.SecretVolumeSource
	for _, v := range pod.Spec.Volumes {
		if v.Name == "temporal-tls" {
			tlsVolume = v.Secret
		}
	}
	require.NotNil(t, tlsVolume)
	assert.Equal(t, "temporal-tls", tlsVolume.SecretName)
}

func TestTheWorkerCopiesTheSecretsIntoTheDataMoverNamespace(t *testing.T) {
	ctx := context.Background()
	secret := func(ns, name, value string, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: map[string][]byte{"k": []byte(value)}}
	}
	kc := fake.NewClientset(
		secret("cairn-system", "tls", "cert-1", nil),
		secret("cairn-system", "creds", "key-1", nil),
		secret("movers", "creds", "users-own", nil), // the user's own: left alone
	)
	p := &Pod{Volumes: &Volumes{Kube: kc}, Config: PodConfig{Secrets: PodSecrets{TemporalTLS: "tls", Env: []string{"creds"}, From: "cairn-system"}}}
	get := func(ns, name string) *corev1.Secret {
		s, err := kc.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return s
	}

	require.NoError(t, p.copySecrets(ctx, "movers"))
	assert.Equal(t, "cert-1", string(get("movers", "tls").Data["k"]))
	assert.Equal(t, "cairn-system", get("movers", "tls").Labels[v1alpha1.LabelCopiedFrom])
	assert.Equal(t, "users-own", string(get("movers", "creds").Data["k"]))

	// a rotated certificate reaches the next data mover
	_, err := kc.CoreV1().Secrets("cairn-system").Update(ctx, secret("cairn-system", "tls", "cert-2", nil), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, p.copySecrets(ctx, "movers"))
	assert.Equal(t, "cert-2", string(get("movers", "tls").Data["k"]))

	p.Config.Secrets.APIKey = "missing"
	err = p.copySecrets(ctx, "movers")
	assert.ErrorContains(t, err, "data mover Secret cairn-system/missing")
	assert.ErrorContains(t, err, "not found")
}

// TestFileSystemBackupPodsMountOnlyTheirVolume: a file-system backup's
// data mover runs on the pod's node as root that may only read, mounts
// the one volume directory read-only, and gets no token.
func TestFileSystemBackupPodsMountOnlyTheirVolume(t *testing.T) {
	target := Target{Owner: "b1", Mode: FSBackup, Namespace: "movers", Pod: "app/web", PodUID: "u1", Node: "node-2",
		HostDir: "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/cache", TaskQueue: "cairn-datamover-0123456789abcdef", Attempt: 1}
	pod := (&Pod{Config: PodConfig{Image: "cairn:test"}}).PodFor(target)
	assert.Equal(t, "node-2", pod.Spec.NodeName)
	assert.False(t, *pod.Spec.AutomountServiceAccountToken)
	var hostPaths []string
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.HostPath.Path)
		}
	}
	assert.Equal(t, []string{target.HostDir}, hostPaths, "no host path but the volume's")
	assert.Contains(t, pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: MountPath, ReadOnly: true})
	assert.Equal(t, int64(0), *pod.Spec.SecurityContext.RunAsUser)
	c := pod.Spec.Containers[0].SecurityContext
	assert.Equal(t, []corev1.Capability{"ALL"}, c.Capabilities.Drop)
	assert.Equal(t, []corev1.Capability{"DAC_READ_SEARCH"}, c.Capabilities.Add, "it may read every file, and change none")
	assert.False(t, *c.AllowPrivilegeEscalation)
	assert.True(t, *c.ReadOnlyRootFilesystem)
	assert.Nil(t, c.Privileged)
}
