package main

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	biav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/backupitemaction/v2"
	riav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v2"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// adapter serves Velero's item actions as one cairn extension: every
// backup, restore and delete item action its plugins register, in the
// order Velero lists them, each on the items its AppliesTo selects.
type adapter struct {
	backups  []action[biav2.BackupItemAction]
	restores []action[riav2.RestoreItemAction]
	deletes  []action[velero.DeleteItemAction]
	// veleroNamespace is the namespace of the Backup and Restore objects
	// the plugins are handed.
	veleroNamespace string
	// poll is how often an operation's progress is asked.
	poll time.Duration
	log  logrus.FieldLogger
}

// action is one plugin action and what it applies to.
type action[T any] struct {
	name string
	do   T
	sel  selector
}

// applier is what every Velero action has.
type applier interface {
	AppliesTo() (velero.ResourceSelector, error)
}

// newAction asks an action what it applies to.
func newAction[T applier](name string, do T) (action[T], error) {
	rs, err := do.AppliesTo()
	if err != nil {
		return action[T]{}, fmt.Errorf("%s: applies to: %w", name, err)
	}
	sel, err := newSelector(rs)
	if err != nil {
		return action[T]{}, fmt.Errorf("%s: %w", name, err)
	}
	return action[T]{name: name, do: do, sel: sel}, nil
}

// pluginOperation is one operation a plugin action started: what a cairn
// operation's data holds, to ask its progress and cancel it.
type pluginOperation struct {
	Action string `json:"action"`
	ID     string `json:"id"`
}

// operationStart makes the cairn operation of the item from the
// operations its actions started.
func operationStart(ops []pluginOperation, toUpdate []extension.ObjectRef) (*extension.OperationStart, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	id := ops[0].Action + "/" + ops[0].ID
	if len(ops) > 1 || len(id) > extension.MaxOperationIDBytes {
		id = fmt.Sprintf("velero/%x", sha(data))
	}
	return &extension.OperationStart{ID: id, ItemsToUpdate: toUpdate, Data: data}, nil
}

func (a *adapter) backupObject(name string) *velerov1.Backup {
	return &velerov1.Backup{TypeMeta: metav1.TypeMeta{APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "Backup"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.veleroNamespace}}
}

func (a *adapter) restoreObject(name, backup string, mapping map[string]string) *velerov1.Restore {
	return &velerov1.Restore{TypeMeta: metav1.TypeMeta{APIVersion: velerov1.SchemeGroupVersion.String(), Kind: "Restore"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.veleroNamespace},
		Spec:       velerov1.RestoreSpec{BackupName: backup, NamespaceMapping: mapping}}
}

// decode reads an item cairn sent.
func decode(raw json.RawMessage) (*unstructured.Unstructured, error) {
	item := &unstructured.Unstructured{}
	if err := item.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	return item, nil
}

func asUnstructured(u runtime.Unstructured) *unstructured.Unstructured {
	if uu, ok := u.(*unstructured.Unstructured); ok {
		return uu
	}
	return &unstructured.Unstructured{Object: u.UnstructuredContent()}
}

// refs turns Velero's resource identifiers into cairn's object references,
// their namespace mapped by mapNamespace.
func refs(ids []velero.ResourceIdentifier, mapNamespace func(string) string) []extension.ObjectRef {
	out := make([]extension.ObjectRef, 0, len(ids))
	for _, id := range ids {
		out = append(out, extension.ObjectRef{Group: id.Group, Resource: id.Resource, Namespace: mapNamespace(id.Namespace), Name: id.Name})
	}
	return out
}

func same(ns string) string { return ns }

func sha(data []byte) []byte {
	sum := sha256.Sum256(data)
	return sum[:12]
}

// unreachable reports whether err says the plugin process is gone (it
// crashed, or was killed): the call is retried, and Velero's restartable
// process starts the plugin again, rather than the item failing.
func unreachable(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		switch se.GRPCStatus().Code() {
		case codes.Unavailable, codes.Canceled:
			return true
		}
	}
	return false
}

// itemError is the answer to a plugin's error on one item, or, when the
// plugin is out of reach, the error that retries the whole call.
func itemError(actionName string, err error) (string, error) {
	if unreachable(err) {
		return "", fmt.Errorf("velero plugin %s: %w", actionName, err)
	}
	return fmt.Sprintf("velero plugin %s: %v", actionName, err), nil
}

// refused ends an operation as failed, not retried.
func refused(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return temporal.NewNonRetryableApplicationError(msg, extension.ErrTypeRefused, nil)
}

// progressorOf finds the action named name among actions, and asks it
// about its operations with ask and cancel.
func progressorOf[T any](actions []action[T], name string, ask func(T, string) (progress, error),
	cancel func(T, string) error) (progressor, bool) {
	for _, act := range actions {
		if act.name == name {
			return progressor{
				progress: func(id string) (progress, error) { return ask(act.do, id) },
				cancel:   func(id string) error { return cancel(act.do, id) },
			}, true
		}
	}
	return progressor{}, false
}
