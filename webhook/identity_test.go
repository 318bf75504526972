package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

var alice = authenticationv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
	Extra: map[string]authenticationv1.ExtraValue{"scopes": {"backup"}}}

func review(t *testing.T, op admissionv1.Operation, obj, old any) admission.Request {
	t.Helper()
	raw := func(o any) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		data, err := json.Marshal(o)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: data}
	}
	var meta metav1.ObjectMeta
	var kind string
	switch o := obj.(type) {
	case *v1alpha1.Backup:
		meta, kind = o.ObjectMeta, "Backup"
	case *v1alpha1.Restore:
		meta, kind = o.ObjectMeta, "Restore"
	case *v1alpha1.Schedule:
		meta, kind = o.ObjectMeta, "Schedule"
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req-1", Operation: op, UserInfo: alice, Namespace: meta.Namespace, Name: meta.Name,
		Kind:   metav1.GroupVersionKind{Group: v1alpha1.APIGroup, Version: "v1alpha1", Kind: kind},
		Object: raw(obj), OldObject: raw(old),
	}}
}

func recorder(t *testing.T) *identityRecorder {
	return &identityRecorder{namespace: "cairn", log: zaptest.NewLogger(t)}
}

// recorded applies the response's patch and returns the identity it
// records.
func recorded(t *testing.T, req admission.Request, resp admission.Response) *v1alpha1.Identity {
	t.Helper()
	require.True(t, resp.Allowed, "%+v", resp.Result)
	var value string
	for _, p := range resp.Patches {
		switch p.Path {
		case "/metadata/annotations":
			value = p.Value.(map[string]any)[v1alpha1.AnnotationActingAs].(string)
		case "/metadata/annotations/" + strings.ReplaceAll(v1alpha1.AnnotationActingAs, "/", "~1"):
			value = p.Value.(string)
		}
	}
	id, err := v1alpha1.ParseIdentityAnnotation(value)
	require.NoError(t, err, "patches: %+v", resp.Patches)
	return id
}

func TestCreateRecordsTheCreatorAsTheAPIServerNamesThem(t *testing.T) {
	want := &v1alpha1.Identity{Username: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string][]string{"scopes": {"backup"}}}
	fresh := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a"}}
	req := review(t, admissionv1.Create, fresh, nil)
	assert.Equal(t, want, recorded(t, req, recorder(t).Handle(context.Background(), req)))

	forged := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a",
		Annotations: map[string]string{v1alpha1.AnnotationActingAs: `{"username":"system:admin","groups":["system:masters"]}`, "note": "kept"}}}
	req = review(t, admissionv1.Create, forged, nil)
	resp := recorder(t).Handle(context.Background(), req)
	assert.Equal(t, want, recorded(t, req, resp), "an identity written by the creator is replaced by the creator's own")
	for _, p := range resp.Patches {
		assert.NotContains(t, p.Path, "note", "other annotations stay")
	}
}

func TestUpdateRefusesAnyChangeOfTheRecordedCreator(t *testing.T) {
	recordedBy := func(value string) *v1alpha1.Backup {
		b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a"}}
		if value != "" {
			b.Annotations = map[string]string{v1alpha1.AnnotationActingAs: value}
		}
		return b
	}
	bob := v1alpha1.IdentityAnnotation(v1alpha1.Identity{Username: "bob"})
	admin := v1alpha1.IdentityAnnotation(v1alpha1.Identity{Username: "system:admin"})
	for _, c := range []struct {
		name     string
		old, new string
		allowed  bool
	}{
		{"unchanged", bob, bob, true},
		{"changed", bob, admin, false},
		{"removed", bob, "", false},
		{"added to a resource created without the webhook", "", admin, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := review(t, admissionv1.Update, recordedBy(c.new), recordedBy(c.old))
			resp := recorder(t).Handle(context.Background(), req)
			assert.Equal(t, c.allowed, resp.Allowed, "%+v", resp.Result)
			assert.Empty(t, resp.Patches, "an update records no one")
			if !c.allowed {
				assert.Contains(t, resp.Result.Message, v1alpha1.AnnotationActingAs, "the refusal names the field")
			}
		})
	}
}

func TestCreateOutsideCairnsNamespaceStaysInItsNamespace(t *testing.T) {
	for _, c := range []struct {
		name    string
		obj     any
		refusal string // "" allowed
	}{
		{"a backup of its namespace", &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a"},
			Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{"team-a"}}}, ""},
		{"a backup that reaches team-b", &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a"},
			Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{"team-a", "team-b"}}}, `spec.includedNamespaces: "team-b"`},
		{"a backup of every namespace", &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a"},
			Spec: v1alpha1.BackupSpec{IncludedNamespaces: []string{"*"}}}, `spec.includedNamespaces: "*"`},
		{"a backup of cluster-scoped objects", &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a"},
			Spec: v1alpha1.BackupSpec{ClusterResources: v1alpha1.ClusterResourcesAuto}}, "spec.clusterResources"},
		{"a backup whose run name is too long", &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "a-name-of-sixty-characters-that-with-its-namespace-is-too-lo", Namespace: "team-a"}},
			"at most 63"},
		{"a restore of another namespace's backup", &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team-a"},
			Spec: v1alpha1.RestoreSpec{BackupName: "team-b.nightly"}}, "names a backup of another namespace"},
		{"a restore into team-b", &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team-a"},
			Spec: v1alpha1.RestoreSpec{BackupName: "nightly", NamespaceMapping: map[string]string{"team-a": "team-b"}}}, "spec.namespaceMapping"},
		{"a restore of its namespace's backup", &v1alpha1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "team-a"},
			Spec: v1alpha1.RestoreSpec{BackupName: "nightly"}}, ""},
		{"a schedule of its namespace", &v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "team-a"},
			Spec: v1alpha1.ScheduleSpec{Cron: "0 2 * * *"}}, ""},
		{"a schedule that reaches team-b", &v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "team-a"},
			Spec: v1alpha1.ScheduleSpec{Template: v1alpha1.BackupSpec{IncludedNamespaces: []string{"team-b"}}}}, "spec.template.includedNamespaces"},
		{"a schedule of etcd snapshots", &v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "team-a"},
			Spec: v1alpha1.ScheduleSpec{Kind: v1alpha1.KindEtcdSnapshot}}, "spec.kind"},
		{"anything in cairn's namespace", &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: "cairn"},
			Spec: v1alpha1.BackupSpec{ClusterResources: v1alpha1.ClusterResourcesInclude}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := review(t, admissionv1.Create, c.obj, nil)
			resp := recorder(t).Handle(context.Background(), req)
			if c.refusal == "" {
				recorded(t, req, resp)
				return
			}
			assert.False(t, resp.Allowed)
			assert.Contains(t, resp.Result.Message, c.refusal)
		})
	}
}

func TestAScheduleActsAsWhoeverLastChangedItsSpec(t *testing.T) {
	bob := v1alpha1.IdentityAnnotation(v1alpha1.Identity{Username: "bob"})
	schedule := func(cron, actingAs string) *v1alpha1.Schedule {
		return &v1alpha1.Schedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "team-a",
			Annotations: map[string]string{v1alpha1.AnnotationActingAs: actingAs}}, Spec: v1alpha1.ScheduleSpec{Cron: cron}}
	}
	req := review(t, admissionv1.Update, schedule("0 3 * * *", bob), schedule("0 2 * * *", bob))
	assert.Equal(t, "alice", recorded(t, req, recorder(t).Handle(context.Background(), req)).Username,
		"alice changed bob's schedule: it now acts as alice")

	req = review(t, admissionv1.Update, schedule("0 2 * * *", bob), schedule("0 2 * * *", bob))
	resp := recorder(t).Handle(context.Background(), req)
	assert.True(t, resp.Allowed)
	assert.Empty(t, resp.Patches, "a change of metadata only keeps whom it acts as")

	admin := v1alpha1.IdentityAnnotation(v1alpha1.Identity{Username: "system:admin"})
	req = review(t, admissionv1.Update, schedule("0 2 * * *", admin), schedule("0 2 * * *", bob))
	assert.False(t, recorder(t).Handle(context.Background(), req).Allowed, "nor may it be rewritten by hand")
}
