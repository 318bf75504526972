package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/webhook"
)

const webhookConfigName = "cairn"

// webhookConfig is the webhook's configuration, created at created.
func webhookConfig(created time.Time, edit func(*admissionregistrationv1.MutatingWebhook)) *admissionregistrationv1.MutatingWebhookConfiguration {
	cfg := webhook.Configuration(webhookConfigName, admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/")})
	cfg.CreationTimestamp = metav1.NewTime(created)
	if edit != nil {
		edit(&cfg.Webhooks[0])
	}
	return cfg
}

// teamBackup is a Backup of namespace team-a, created at created, with
// the creator the webhook recorded (none when id is nil).
func teamBackup(created time.Time, id *v1alpha1.Identity, spec v1alpha1.BackupSpec) *v1alpha1.Backup {
	b := &v1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "team-a",
		CreationTimestamp: metav1.NewTime(created)}, Spec: spec}
	if id != nil {
		b.Annotations = map[string]string{v1alpha1.AnnotationActingAs: v1alpha1.IdentityAnnotation(*id)}
	}
	return b
}

func TestBackupResourceOfANamespaceActsAsItsRecordedCreatorInItsNamespaceOnly(t *testing.T) {
	installed := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	later := installed.Add(time.Hour)
	alice := &v1alpha1.Identity{Username: "alice", Groups: []string{"team-a"}}
	r, runs, _ := newBackupReconciler(t, webhookConfig(installed, nil), teamBackup(later, alice, v1alpha1.BackupSpec{}))
	r.tenancy.webhookConfiguration, r.tenancy.propagation = webhookConfigName, webhook.Propagation

	b := reconcileBackup(t, r, "team-a", "mine")
	require.Len(t, runs.created, 1, b.Status.Message)
	req := runs.created[0]
	assert.Equal(t, "team-a.mine", req.Name, "a namespace's run is named in it: no collision with team-b's mine")
	assert.Equal(t, "team-a", runs.servesNS[0])
	assert.Equal(t, []string{"team-a"}, req.IncludedNamespaces)
	assert.Equal(t, v1alpha1.ClusterResourcesExclude, req.ClusterResources)
	assert.Equal(t, alice, runs.actingAs[0], "the run acts as the creator the webhook recorded")
	assert.Equal(t, "team-a.mine", b.Status.RunName)
	assert.Equal(t, "alice (groups team-a)", b.Status.ActingAs)

	closeRun(runs, r.waiter, "backup/team-a.mine", v1alpha1.PhaseCompleted)
	assert.Equal(t, v1alpha1.PhaseCompleted, reconcileBackup(t, r, "team-a", "mine").Status.Phase, "the end is read under the run's name")
}

func TestBackupResourceOfANamespaceIsRefusedWithoutTheWebhookInFront(t *testing.T) {
	installed := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	later := installed.Add(time.Hour)
	alice := &v1alpha1.Identity{Username: "alice"}
	for _, c := range []struct {
		name       string
		configured bool
		objs       []client.Object
		refusal    string
	}{
		{"this cairn runs no webhook", false, []client.Object{teamBackup(later, alice, v1alpha1.BackupSpec{})}, "runs none"},
		{"its configuration is gone", true, []client.Object{teamBackup(later, alice, v1alpha1.BackupSpec{})}, "does not exist"},
		{"created before the webhook", true, []client.Object{webhookConfig(installed, nil),
			teamBackup(installed.Add(time.Second), alice, v1alpha1.BackupSpec{})}, "create it again"},
		{"the webhook lets requests pass when it fails", true, []client.Object{webhookConfig(installed, func(w *admissionregistrationv1.MutatingWebhook) {
			w.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}), teamBackup(later, alice, v1alpha1.BackupSpec{})}, "failurePolicy"},
		{"the webhook skips labelled namespaces", true, []client.Object{webhookConfig(installed, func(w *admissionregistrationv1.MutatingWebhook) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"cairn": "on"}}
		}), teamBackup(later, alice, v1alpha1.BackupSpec{})}, "skips some resources"},
		{"the webhook does not see restores", true, []client.Object{webhookConfig(installed, func(w *admissionregistrationv1.MutatingWebhook) {
			w.Rules[0].Resources = []string{"backups"}
		}), teamBackup(later, alice, v1alpha1.BackupSpec{})}, "does not see"},
		{"no creator recorded", true, []client.Object{webhookConfig(installed, nil), teamBackup(later, nil, v1alpha1.BackupSpec{})}, "is missing"},
		{"it reaches another namespace", true, []client.Object{webhookConfig(installed, nil),
			teamBackup(later, alice, v1alpha1.BackupSpec{IncludedNamespaces: []string{"team-b"}})}, `"team-b" is not this namespace`},
		{"it takes cluster-scoped objects", true, []client.Object{webhookConfig(installed, nil),
			teamBackup(later, alice, v1alpha1.BackupSpec{ClusterResources: v1alpha1.ClusterResourcesInclude})}, "no cluster-scoped object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, runs, _ := newBackupReconciler(t, c.objs...)
			if c.configured {
				r.tenancy.webhookConfiguration, r.tenancy.propagation = webhookConfigName, webhook.Propagation
			}
			b := reconcileBackup(t, r, "team-a", "mine")
			assert.Empty(t, runs.created, "nothing runs for a namespace's users unless the webhook recorded who they are")
			assert.Equal(t, v1alpha1.PhaseFailed, b.Status.Phase)
			assert.Contains(t, b.Status.Message, c.refusal)
		})
	}
}
