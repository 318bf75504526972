package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	biav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/backupitemaction/v2"
	riav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v2"

	"github.com/cairn-backup/cairn/pkg/extension"
)

var configMaps = extension.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}

func configMap(ns, name string, labels map[string]any) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels}})
	return raw
}

// fakeBackupAction is a backup item action v2 in process.
type fakeBackupAction struct {
	selects  velero.ResourceSelector
	execute  func(u *unstructured.Unstructured) (runtime.Unstructured, []velero.ResourceIdentifier, string, error)
	progress func(id string) (velero.OperationProgress, error)
	canceled []string
}

func (f *fakeBackupAction) Name() string                                { return "fake" }
func (f *fakeBackupAction) AppliesTo() (velero.ResourceSelector, error) { return f.selects, nil }
func (f *fakeBackupAction) Execute(item runtime.Unstructured, _ *velerov1.Backup) (runtime.Unstructured, []velero.ResourceIdentifier, string, []velero.ResourceIdentifier, error) {
	out, add, op, err := f.execute(item.(*unstructured.Unstructured))
	return out, add, op, nil, err
}
func (f *fakeBackupAction) Progress(id string, _ *velerov1.Backup) (velero.OperationProgress, error) {
	return f.progress(id)
}
func (f *fakeBackupAction) Cancel(id string, _ *velerov1.Backup) error {
	f.canceled = append(f.canceled, id)
	return nil
}

var _ biav2.BackupItemAction = &fakeBackupAction{}

func backupAdapter(t *testing.T, actions ...*fakeBackupAction) *adapter {
	t.Helper()
	a := &adapter{poll: time.Millisecond, log: logrus.New(), veleroNamespace: "velero"}
	for i, f := range actions {
		act, err := newAction([]string{"first", "second"}[i], biav2.BackupItemAction(f))
		require.NoError(t, err)
		a.backups = append(a.backups, act)
	}
	return a
}

// TestBackupActionsChainAsVeleroRunsThem: each selected action runs on
// what the one before returned; additional items and operations add up;
// an item no action selects is stored as it came; an action's error is
// its item's, but a plugin out of reach retries the call.
func TestBackupActionsChainAsVeleroRunsThem(t *testing.T) {
	mark := func(key string) func(u *unstructured.Unstructured) (runtime.Unstructured, []velero.ResourceIdentifier, string, error) {
		return func(u *unstructured.Unstructured) (runtime.Unstructured, []velero.ResourceIdentifier, string, error) {
			ann := u.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[key] = "yes"
			u.SetAnnotations(ann)
			switch u.GetName() {
			case "broken":
				return nil, nil, "", errors.New("cannot read it")
			case "gone":
				return nil, nil, "", status.Error(codes.Unavailable, "plugin exited")
			}
			extra := []velero.ResourceIdentifier{{GroupResource: schema.GroupResource{Resource: "secrets"}, Namespace: u.GetNamespace(), Name: key}}
			return u, extra, key + "-op", nil
		}
	}
	first := &fakeBackupAction{selects: velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, execute: mark("first")}
	second := &fakeBackupAction{selects: velero.ResourceSelector{IncludedResources: []string{"configmaps"}, LabelSelector: "app=web"},
		execute: mark("second")}
	a := backupAdapter(t, first, second)

	resp, err := a.BackupItems(context.Background(), extension.BackupItemsRequest{Backup: "b1", Resource: configMaps,
		Items: []json.RawMessage{configMap("shop", "web", map[string]any{"app": "web"}), configMap("shop", "db", nil), configMap("shop", "broken", nil)}})
	require.NoError(t, err)
	web := resp.Items[0]
	var obj unstructured.Unstructured
	require.NoError(t, obj.UnmarshalJSON(web.Item))
	assert.Equal(t, map[string]string{"first": "yes", "second": "yes"}, obj.GetAnnotations(), "the second ran on the first's answer")
	assert.Equal(t, []extension.ObjectRef{{Resource: "secrets", Namespace: "shop", Name: "first"}, {Resource: "secrets", Namespace: "shop", Name: "second"}},
		web.AdditionalItems)
	require.NotNil(t, web.Operation)
	var ops []pluginOperation
	require.NoError(t, json.Unmarshal(web.Operation.Data, &ops))
	assert.Equal(t, []pluginOperation{{Action: "first", ID: "first-op"}, {Action: "second", ID: "second-op"}}, ops)
	assert.Empty(t, extension.CheckOperation(web.Operation), "the operation keeps cairn's contract")
	assert.Len(t, resp.Items[1].AdditionalItems, 1, "the second action does not select db")
	assert.Equal(t, "velero plugin first: cannot read it", resp.Items[2].Error)

	_, err = a.BackupItems(context.Background(), extension.BackupItemsRequest{Backup: "b1", Resource: configMaps,
		Items: []json.RawMessage{configMap("shop", "gone", nil)}})
	require.Error(t, err, "a plugin out of reach retries the call")
}

// TestOperationsAreAskedUntilCompleted: the operation activity asks the
// plugin's progress until it completes, heartbeating it; one the plugin
// says failed ends as refused (not retried) with its message.
func TestOperationsAreAskedUntilCompleted(t *testing.T) {
	asked := 0
	f := &fakeBackupAction{progress: func(id string) (velero.OperationProgress, error) {
		asked++
		if id == "bad" {
			return velero.OperationProgress{Completed: true, Err: "snapshot quota exceeded"}, nil
		}
		return velero.OperationProgress{Completed: asked >= 3, NCompleted: int64(asked), NTotal: 3, OperationUnits: "GiB", Description: "copying"}, nil
	}}
	a := backupAdapter(t, f)
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(a.BackupOperation, activityNamed(extension.BackupOperationV1))
	data, _ := json.Marshal([]pluginOperation{{Action: "first", ID: "good"}})
	val, err := env.ExecuteActivity(extension.BackupOperationV1, extension.BackupOperationRequest{Backup: "b1", OperationID: "first/good", Data: data})
	require.NoError(t, err)
	var res extension.BackupOperationResult
	require.NoError(t, val.Get(&res))
	assert.Equal(t, "copying", res.Description)
	assert.Equal(t, 3, asked)

	data, _ = json.Marshal([]pluginOperation{{Action: "first", ID: "bad"}})
	_, err = env.ExecuteActivity(extension.BackupOperationV1, extension.BackupOperationRequest{Backup: "b1", OperationID: "first/bad", Data: data})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, extension.ErrTypeRefused, appErr.Type())
	assert.True(t, appErr.NonRetryable())
	assert.Contains(t, appErr.Error(), "velero plugin first: operation bad failed: snapshot quota exceeded")

	_, err = env.ExecuteActivity(extension.BackupOperationV1, extension.BackupOperationRequest{Backup: "b1", OperationID: "x", Data: json.RawMessage(`{}`)})
	require.ErrorAs(t, err, &appErr)
	assert.Equal(t, extension.ErrTypeRefused, appErr.Type(), "data that is not the adapter's is refused")
}

// fakeRestoreAction is a restore item action v2 in process.
type fakeRestoreAction struct {
	execute func(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error)
}

func (f *fakeRestoreAction) Name() string { return "fake" }
func (f *fakeRestoreAction) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}}, nil
}
func (f *fakeRestoreAction) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	return f.execute(in)
}
func (f *fakeRestoreAction) Progress(string, *velerov1.Restore) (velero.OperationProgress, error) {
	return velero.OperationProgress{Completed: true}, nil
}
func (f *fakeRestoreAction) Cancel(string, *velerov1.Restore) error { return nil }
func (f *fakeRestoreAction) AreAdditionalItemsReady([]velero.ResourceIdentifier, *velerov1.Restore) (bool, error) {
	return true, nil
}

// TestRestoreActionsAnswerInCairnsTerms: the plugin is handed the item as
// it will be created and as backed up (its namespace unmapped), and the
// restore with its mapping; the additional items it names as backed up
// are mapped, waited for when it asks, within cairn's bound; its skip
// skips the item; its operation is the item's.
func TestRestoreActionsAnswerInCairnsTerms(t *testing.T) {
	var seen *velero.RestoreItemActionExecuteInput
	f := &fakeRestoreAction{execute: func(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
		seen = in
		u := in.Item.(*unstructured.Unstructured)
		if u.GetName() == "skip" {
			return &velero.RestoreItemActionExecuteOutput{SkipRestore: true}, nil
		}
		u.SetLabels(map[string]string{"restored": "yes"})
		from := in.ItemFromBackup.(*unstructured.Unstructured)
		out := velero.NewRestoreItemActionExecuteOutput(u)
		out.AdditionalItems = []velero.ResourceIdentifier{{GroupResource: schema.GroupResource{Resource: "secrets"}, Namespace: from.GetNamespace(), Name: "pw"}}
		out.WaitForAdditionalItems, out.AdditionalItemsReadyTimeout = true, 3*time.Hour
		out.OperationID = "import-1"
		return out, nil
	}}
	act, err := newAction("restorer", riav2.RestoreItemAction(f))
	require.NoError(t, err)
	a := &adapter{restores: []action[riav2.RestoreItemAction]{act}, log: logrus.New(), veleroNamespace: "velero"}
	resp, err := a.RestoreItems(context.Background(), extension.RestoreItemsRequest{Restore: "r1", Backup: "b1", Resource: configMaps,
		NamespaceMapping: map[string]string{"prod": "staging"}, Items: []json.RawMessage{configMap("staging", "web", nil), configMap("staging", "skip", nil)}})
	require.NoError(t, err)
	assert.Equal(t, "prod", seen.ItemFromBackup.(*unstructured.Unstructured).GetNamespace())
	assert.Equal(t, map[string]string{"prod": "staging"}, seen.Restore.Spec.NamespaceMapping)
	assert.Equal(t, "b1", seen.Restore.Spec.BackupName)
	web := resp.Items[0]
	pw := extension.ObjectRef{Resource: "secrets", Namespace: "staging", Name: "pw"}
	assert.Equal(t, []extension.ObjectRef{pw}, web.AdditionalItems)
	require.NotNil(t, web.WaitFor)
	assert.Equal(t, []extension.ObjectRef{pw}, web.WaitFor.Items)
	assert.Equal(t, "1h0m0s", web.WaitFor.Timeout, "bounded by cairn's longest wait")
	assert.Equal(t, "restorer/import-1", web.Operation.ID)
	assert.Empty(t, extension.CheckRestoreAnswer(configMap("staging", "web", nil), web), "the answer keeps cairn's contract")
	assert.Equal(t, "velero plugin restorer skips it", resp.Items[1].Skip)
}

// TestSelectorReadsAppliesToAsVelero: resources by name, name.group or
// kind; namespaces included and excluded; an item without a namespace
// only when namespaces are not narrowed; labels.
func TestSelectorReadsAppliesToAsVelero(t *testing.T) {
	deployments := extension.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment"}
	nodes := extension.Resource{Version: "v1", Resource: "nodes", Kind: "Node"}
	for _, c := range []struct {
		rs   velero.ResourceSelector
		r    extension.Resource
		ns   string
		want bool
	}{
		{velero.ResourceSelector{}, deployments, "shop", true},
		{velero.ResourceSelector{IncludedResources: []string{"deployments.apps"}}, deployments, "shop", true},
		{velero.ResourceSelector{IncludedResources: []string{"Deployment"}}, deployments, "shop", true},
		{velero.ResourceSelector{IncludedResources: []string{"pods"}}, deployments, "shop", false},
		{velero.ResourceSelector{ExcludedResources: []string{"deployments"}}, deployments, "shop", false},
		{velero.ResourceSelector{IncludedNamespaces: []string{"shop"}}, deployments, "shop", true},
		{velero.ResourceSelector{IncludedNamespaces: []string{"shop"}}, deployments, "bank", false},
		{velero.ResourceSelector{ExcludedNamespaces: []string{"shop"}}, deployments, "shop", false},
		{velero.ResourceSelector{IncludedNamespaces: []string{"shop"}}, nodes, "", false},
		{velero.ResourceSelector{IncludedNamespaces: []string{"*"}}, nodes, "", true},
		{velero.ResourceSelector{LabelSelector: "app=web"}, deployments, "shop", true},
		{velero.ResourceSelector{LabelSelector: "app=db"}, deployments, "shop", false},
	} {
		s, err := newSelector(c.rs)
		require.NoError(t, err)
		assert.Equal(t, c.want, s.selects(c.r, c.ns, map[string]string{"app": "web"}), "%+v on %s in %q", c.rs, c.r.Resource, c.ns)
	}
	_, err := newSelector(velero.ResourceSelector{LabelSelector: "app in ("})
	assert.Error(t, err)
}

func activityNamed(name string) activity.RegisterOptions { return activity.RegisterOptions{Name: name} }

// TestRegistrationNamesTypesAsCairnMatchesThem: names cairn matches
// exactly are kept; a kind, a glob or a core-less name becomes "*" (the
// adapter narrows per action); naming Secrets allows them.
func TestRegistrationNamesTypesAsCairnMatchesThem(t *testing.T) {
	sel := func(resources ...string) selector {
		s, err := newSelector(velero.ResourceSelector{IncludedResources: resources})
		require.NoError(t, err)
		return s
	}
	a := &adapter{
		backups:  []action[biav2.BackupItemAction]{{sel: sel("deployments.apps")}, {sel: sel("secrets", "pods")}},
		restores: []action[riav2.RestoreItemAction]{{sel: sel("jobs")}},
	}
	assert.Equal(t, `apiVersion: cairn.io/v1alpha1
kind: Extensions
extensions:
- name: velero
  taskQueue: q
  backup: {resources: [deployments.apps, pods, secrets], allowSecrets: true}
  # "*" leaves Secrets out; add allowSecrets: true to send them too, as Velero does
  restore: {resources: [*]}
`, a.registration("velero", "q"))
	assert.Equal(t, []string{"*"}, sel("Pod").resources())
	assert.Equal(t, []string{"*"}, sel("pods", "*.apps").resources())
}

// fakeDeleteAction fails for the items it is told to.
type fakeDeleteAction struct {
	fail  bool
	calls int
}

func (f *fakeDeleteAction) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{}, nil
}
func (f *fakeDeleteAction) Execute(*velero.DeleteItemActionExecuteInput) error {
	f.calls++
	if f.fail {
		return errors.New("snapshot API down")
	}
	return nil
}

// TestDeleteActionsAllRunAndFailuresAreTheItems: an action's failure is
// the item's error, and the actions after it still run, as in Velero.
func TestDeleteActionsAllRunAndFailuresAreTheItems(t *testing.T) {
	failing, after := &fakeDeleteAction{fail: true}, &fakeDeleteAction{}
	a := &adapter{log: logrus.New()}
	for i, f := range []*fakeDeleteAction{failing, after} {
		act, err := newAction([]string{"failing", "after"}[i], velero.DeleteItemAction(f))
		require.NoError(t, err)
		a.deletes = append(a.deletes, act)
	}
	resp, err := a.DeleteItems(context.Background(), extension.DeleteItemsRequest{Backup: "b1", Resource: configMaps,
		Items: []json.RawMessage{configMap("shop", "web", nil)}})
	require.NoError(t, err)
	assert.Contains(t, resp.Items[0].Error, "snapshot API down")
	assert.Equal(t, 1, after.calls, "the action after the failing one still ran")
}

// TestSelectorGlobs: namespaces and resources may be globs, as Velero's
// include and exclude lists are.
func TestSelectorGlobs(t *testing.T) {
	s, err := newSelector(velero.ResourceSelector{IncludedNamespaces: []string{"team-*"}, ExcludedResources: []string{"*.apps"}})
	require.NoError(t, err)
	assert.True(t, s.selects(configMaps, "team-a", nil))
	assert.False(t, s.selects(configMaps, "other", nil))
	assert.False(t, s.selects(extension.Resource{Group: "apps", Resource: "deployments", Kind: "Deployment"}, "team-a", nil))
}
