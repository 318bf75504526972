// Command exampleplugin is a Velero plugin written against Velero's own
// plugin framework, as a Velero user would write one, to run under
// cairn-velero-adapter. Its actions act on ConfigMaps:
//
//   - example.cairn.io/annotate (backup item action v1) marks every
//     ConfigMap it backs up;
//   - example.cairn.io/export (backup item action v2) starts an async
//     export for the ConfigMaps labelled example.cairn.io/export=true;
//   - example.cairn.io/restore (restore item action v2) labels every
//     ConfigMap it restores, skips those annotated
//     example.cairn.io/skip-restore, restores first the Secret named in
//     example.cairn.io/needs, and starts an import for the exported ones.
//
// Its operations live outside the plugin process, as an external
// system's would: in files under $EXAMPLE_PLUGIN_STATE. They do not end
// while the file "hold" is there, so a demo or a test can act mid-way.
package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
)

const (
	exportLabel    = "example.cairn.io/export"
	skipAnnotation = "example.cairn.io/skip-restore"
	needsSecret    = "example.cairn.io/needs"
)

func main() {
	framework.NewServer().
		BindFlags(pflag.CommandLine).
		RegisterBackupItemAction("example.cairn.io/annotate", func(log logrus.FieldLogger) (any, error) { return annotate{}, nil }).
		RegisterBackupItemActionV2("example.cairn.io/export", func(log logrus.FieldLogger) (any, error) { return export{log: log}, nil }).
		RegisterRestoreItemActionV2("example.cairn.io/restore", func(log logrus.FieldLogger) (any, error) { return restore{log: log}, nil }).
		Serve()
}

var configMaps = velero.ResourceSelector{IncludedResources: []string{"configmaps"}}

// annotate marks each ConfigMap it backs up.
type annotate struct{}

func (annotate) AppliesTo() (velero.ResourceSelector, error) { return configMaps, nil }

func (annotate) Execute(item runtime.Unstructured, backup *velerov1.Backup) (runtime.Unstructured, []velero.ResourceIdentifier, error) {
	u := &unstructured.Unstructured{Object: item.UnstructuredContent()}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["example.cairn.io/backed-up-by"] = backup.Name
	u.SetAnnotations(ann)
	return u, nil, nil
}

// export starts an export of each ConfigMap labelled for it.
type export struct{ log logrus.FieldLogger }

func (export) Name() string { return "example.cairn.io/export" }

func (export) AppliesTo() (velero.ResourceSelector, error) {
	return velero.ResourceSelector{IncludedResources: []string{"configmaps"}, LabelSelector: exportLabel + "=true"}, nil
}

func (e export) Execute(item runtime.Unstructured, backup *velerov1.Backup) (runtime.Unstructured, []velero.ResourceIdentifier, string, []velero.ResourceIdentifier, error) {
	u := &unstructured.Unstructured{Object: item.UnstructuredContent()}
	id := "export." + backup.Name + "." + u.GetNamespace() + "." + u.GetName()
	if err := state("started", id); err != nil {
		return nil, nil, "", nil, err
	}
	e.log.WithField("operation", id).Info("Export started")
	return item, nil, id, nil, nil
}

func (export) Progress(id string, _ *velerov1.Backup) (velero.OperationProgress, error) {
	return progress(id)
}

func (export) Cancel(id string, _ *velerov1.Backup) error { return state("canceled", id) }

// restore labels what it restores, skips or delays some, and starts an
// import of the exported ones.
type restore struct{ log logrus.FieldLogger }

func (restore) Name() string { return "example.cairn.io/restore" }

func (restore) AppliesTo() (velero.ResourceSelector, error) { return configMaps, nil }

func (r restore) Execute(in *velero.RestoreItemActionExecuteInput) (*velero.RestoreItemActionExecuteOutput, error) {
	u := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	if _, skip := u.GetAnnotations()[skipAnnotation]; skip {
		return &velero.RestoreItemActionExecuteOutput{SkipRestore: true}, nil
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["example.cairn.io/restored-by"] = in.Restore.Name
	u.SetLabels(labels)
	out := velero.NewRestoreItemActionExecuteOutput(u)
	if secret := u.GetAnnotations()[needsSecret]; secret != "" {
		// Named as backed up, as Velero's plugins do.
		backedUp := &unstructured.Unstructured{Object: in.ItemFromBackup.UnstructuredContent()}
		out.AdditionalItems = []velero.ResourceIdentifier{{GroupResource: schema.GroupResource{Resource: "secrets"},
			Namespace: backedUp.GetNamespace(), Name: secret}}
		out.WaitForAdditionalItems = true
	}
	if labels[exportLabel] == "true" {
		id := "import." + in.Restore.Name + "." + u.GetNamespace() + "." + u.GetName()
		if err := state("started", id); err != nil {
			return nil, err
		}
		out.OperationID = id
	}
	return out, nil
}

func (restore) Progress(id string, _ *velerov1.Restore) (velero.OperationProgress, error) {
	return progress(id)
}

func (restore) Cancel(id string, _ *velerov1.Restore) error { return state("canceled", id) }

func (restore) AreAdditionalItemsReady([]velero.ResourceIdentifier, *velerov1.Restore) (bool, error) {
	return true, nil
}

// progress says how an operation stands: half-way while the hold file
// is there, then completed.
func progress(id string) (velero.OperationProgress, error) {
	dir := os.Getenv("EXAMPLE_PLUGIN_STATE")
	if _, err := os.Stat(filepath.Join(dir, id+".started")); err != nil {
		return velero.OperationProgress{}, errors.New("no such operation: " + id)
	}
	if _, err := os.Stat(filepath.Join(dir, "hold")); err == nil {
		return velero.OperationProgress{NCompleted: 1, NTotal: 2, OperationUnits: "steps", Description: "held half-way"}, nil
	}
	if err := state("done", id); err != nil {
		return velero.OperationProgress{}, err
	}
	what, _, _ := strings.Cut(id, ".")
	return velero.OperationProgress{Completed: true, NCompleted: 2, NTotal: 2, OperationUnits: "steps", Description: what + " done"}, nil
}

// state records that an operation reached a state, in a file the demo or
// test reads.
func state(what, id string) error {
	dir := os.Getenv("EXAMPLE_PLUGIN_STATE")
	if dir == "" {
		return errors.New("EXAMPLE_PLUGIN_STATE is not set")
	}
	return os.WriteFile(filepath.Join(dir, id+"."+what), nil, 0o600)
}
