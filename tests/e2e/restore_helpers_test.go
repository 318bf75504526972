package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/starter"
)

// liveObjects lists every object of every namespaced type in namespace,
// keyed "resource/name", in the comparable form below.
func liveObjects(t *testing.T, cfg *rest.Config, namespace string) map[string]map[string]any {
	t.Helper()
	ctx := context.Background()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	resources, _, err := kube.Discover(dc)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	out := map[string]map[string]any{}
	for _, r := range resources {
		if !r.Namespaced || r.GroupResource() == "events" || r.GroupResource() == "events.events.k8s.io" {
			continue
		}
		list, err := dyn.Resource(r.GVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "list %s", r.GroupResource())
		for i := range list.Items {
			out[r.GroupResource()+"/"+list.Items[i].GetName()] = comparableForm(&list.Items[i], namespace)
		}
	}
	return out
}

// comparableForm is an object without what a faithful restore may change:
// what the server assigns (identity, times, status, cluster IPs and node
// ports, service-account tokens), the restore's own labels, owner UIDs,
// and the namespace (so a mapped restore compares too).
func comparableForm(obj *unstructured.Unstructured, namespace string) map[string]any {
	c := obj.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	labels := c.GetLabels()
	delete(labels, "cairn.io/backup-name")
	delete(labels, "cairn.io/restore-name")
	if c.GetKind() == "Namespace" {
		delete(labels, "kubernetes.io/metadata.name")
	}
	c.SetLabels(labels)
	refs := c.GetOwnerReferences()
	for i := range refs {
		refs[i].UID = ""
	}
	c.SetOwnerReferences(refs)
	switch c.GetKind() {
	case "Service":
		unstructured.RemoveNestedField(c.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(c.Object, "spec", "clusterIPs")
		ports, _, _ := unstructured.NestedSlice(c.Object, "spec", "ports")
		for _, p := range ports {
			delete(p.(map[string]any), "nodePort")
		}
		_ = unstructured.SetNestedSlice(c.Object, ports, "spec", "ports")
	case "Secret":
		if t, _, _ := unstructured.NestedString(c.Object, "type"); t == "kubernetes.io/service-account-token" {
			unstructured.RemoveNestedField(c.Object, "data")
			unstructured.RemoveNestedField(c.Object, "metadata", "annotations", "kubernetes.io/service-account.uid")
		}
	case "RoleBinding":
		subjects, _, _ := unstructured.NestedSlice(c.Object, "subjects")
		for _, s := range subjects {
			if m := s.(map[string]any); m["namespace"] == namespace {
				delete(m, "namespace")
			}
		}
		_ = unstructured.SetNestedSlice(c.Object, subjects, "subjects")
	}
	// Round-trip through JSON so values compare by their JSON form.
	data, _ := json.Marshal(c.Object)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

// deleteNamespace deletes a namespace and waits until it is gone.
func deleteNamespace(t *testing.T, cfg *rest.Config, name string) {
	t.Helper()
	kc := fastClient(t, cfg)
	ctx := context.Background()
	require.NoError(t, kc.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := kc.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		require.True(t, time.Now().Before(deadline), "namespace %s still there: %v", name, err)
		time.Sleep(200 * time.Millisecond)
	}
}

// restore starts a restore and waits until it ends.
func (s *stack) restore(req starter.CreateRestoreRequest, timeout time.Duration) *starter.RestoreView {
	s.t.Helper()
	_, err := s.starter.CreateRestore(context.Background(), req)
	require.NoError(s.t, err, "create restore %s", req.Name)
	return s.waitRestore(req.Name, timeout)
}

func (s *stack) waitRestore(name string, timeout time.Duration) *starter.RestoreView {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, err := s.starter.GetRestore(context.Background(), name)
		if err == nil && v.Phase.Done() && v.Status != nil && v.Status.CompletionTime != nil {
			return v
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("restore %s did not end in %s (last: %+v, err %v)", name, timeout, v, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// backup creates a backup and requires it to complete.
func (s *stack) backup(spec v1alpha1.BackupSpec) {
	s.t.Helper()
	_, err := s.starter.CreateBackup(context.Background(), starter.CreateBackupRequest{BackupSpec: spec})
	require.NoError(s.t, err)
	v := s.waitDone(spec.Name, 2*time.Minute)
	require.Equal(s.t, v1alpha1.PhaseCompleted, v.Phase, "backup %s: %+v", spec.Name, v.Status)
}

// outcomes reads a restore's results.json keyed "resource ns/name", and
// fails the test when an item appears twice.
func (s *stack) outcomes(restore string) map[string]v1alpha1.ItemOutcome {
	s.t.Helper()
	res, err := s.starter.RestoreResults(context.Background(), restore)
	require.NoError(s.t, err)
	out := map[string]v1alpha1.ItemOutcome{}
	for _, o := range res.Items {
		key := o.Resource + " " + o.Namespace + "/" + o.Name
		_, dup := out[key]
		require.False(s.t, dup, "%s appears twice in the results", key)
		out[key] = o
	}
	return out
}

// failedOutcomes lists the items of a restore that failed, for messages.
func failedOutcomes(outcomes map[string]v1alpha1.ItemOutcome) []string {
	var failed []string
	for key, o := range outcomes {
		if o.Result == v1alpha1.ItemFailed {
			failed = append(failed, key+": "+o.Reason)
		}
	}
	return failed
}
