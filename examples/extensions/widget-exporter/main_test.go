package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-backup/cairn/pkg/extension"
	"github.com/cairn-backup/cairn/pkg/extension/extensiontest"
)

var widgets = extension.Resource{Group: "demo.cairn.io", Version: "v1", Resource: "widgets", Kind: "Widget"}

const blue = `{"apiVersion":"demo.cairn.io/v1","kind":"Widget","metadata":{"name":"blue","namespace":"shop","uid":"u-1"},"spec":{"color":"blue","size":3}}`

func newExporter(t *testing.T) *exporter {
	return &exporter{dir: t.TempDir(), chunks: 4, waitTimeout: time.Minute, log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
}

// TestExportsAWidgetAndDeletesItWithTheBackup: the answer starts an
// export that keeps the contract, the export writes the spec, and the
// deletion removes it (again without error, as a retried deletion does).
func TestExportsAWidgetAndDeletesItWithTheBackup(t *testing.T) {
	e := newExporter(t)
	answers := extensiontest.Backup(t, e, widgets, json.RawMessage(blue))
	op := answers[0].Operation
	if op == nil || op.ID != "export/shop/blue/u-1" {
		t.Fatalf("want an export operation, got %+v", answers[0])
	}
	if len(answers[0].AdditionalItems) != 1 || answers[0].AdditionalItems[0].Name != "blue-config" {
		t.Fatalf("want the Widget's ConfigMap as an additional item, got %+v", answers[0].AdditionalItems)
	}
	req := extension.BackupOperationRequest{Backup: "nightly", Extension: "widgets", OperationID: op.ID, Resource: widgets,
		Item: extension.ObjectRef{Group: "demo.cairn.io", Resource: "widgets", Namespace: "shop", Name: "blue"}, Data: op.Data}
	if _, err := extensiontest.Operation(t, e, req, nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(e.dir, "nightly", "shop_blue.json"))
	if err != nil || string(got) != `{"color":"blue","size":3}` {
		t.Fatalf("export: %q, %v", got, err)
	}
	for _, ans := range extensiontest.Delete(t, e, "nightly", widgets, json.RawMessage(blue)) {
		if ans.Error != "" {
			t.Fatal(ans.Error)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "nightly")); !os.IsNotExist(err) {
		t.Fatalf("the backup's exports are still there: %v", err)
	}
}

// TestExportResumesFromItsHeartbeat: an attempt that gets back the
// progress of the one before writes only the chunks after it, and the
// export is whole.
func TestExportResumesFromItsHeartbeat(t *testing.T) {
	e := newExporter(t)
	spec := `{"color":"blue","size":3}`
	data, _ := json.Marshal(exportData{Spec: json.RawMessage(spec)})
	req := extension.BackupOperationRequest{Backup: "nightly", OperationID: "x", Resource: widgets,
		Item: extension.ObjectRef{Resource: "widgets", Namespace: "shop", Name: "blue"}, Data: data}
	final := filepath.Join(e.dir, "nightly", "shop_blue.json")
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		t.Fatal(err)
	}
	// The first attempt wrote two of four chunks (marked, upper case,
	// so a rewrite would show), then died: what it wrote after them is
	// garbage the resumed attempt overwrites.
	size := (len(spec) + 3) / 4
	written := strings.ToUpper(spec[:2*size])
	if err := os.WriteFile(final+".part", []byte(written+"GARBAGE"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := extensiontest.Operation(t, e, req, &extension.OperationProgress{Done: 2, Total: 4}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(final)
	if err != nil || string(got) != written+spec[2*size:] {
		t.Fatalf("export: %q, %v; want the first two chunks kept and the rest written", got, err)
	}
}

// TestImportsTheBackupsExportOfARestoredWidget: a restore into a mapped
// namespace starts an import that finds the export under the Widget's
// backed-up namespace and writes it for the restored one (in chunks that
// resume as an export's do); a Widget the backup has no export of is
// refused.
func TestImportsTheBackupsExportOfARestoredWidget(t *testing.T) {
	e := newExporter(t)
	spec := `{"color":"blue","size":3}`
	if err := os.MkdirAll(filepath.Join(e.dir, "nightly"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "nightly", "shop_blue.json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	restored := strings.Replace(blue, `"namespace":"shop"`, `"namespace":"shop-copy"`, 1)
	answers := extensiontest.RestoreMapped(t, e, widgets, map[string]string{"shop": "shop-copy"}, json.RawMessage(restored))
	op := answers[0].Operation
	if op == nil || op.ID != "import/shop-copy/blue" {
		t.Fatalf("want an import operation, got %+v", answers[0])
	}
	if w := answers[0].WaitFor; w == nil || len(w.Items) != 1 || w.Items[0].Namespace != "shop-copy" || w.Items[0].Name != "blue-config" {
		t.Fatalf("want the Widget held back until its ConfigMap is there, got %+v", answers[0].WaitFor)
	}
	req := extension.RestoreOperationRequest{Restore: "back", Backup: "nightly", Extension: "widgets", OperationID: op.ID, Resource: widgets,
		Item: extension.ObjectRef{Group: "demo.cairn.io", Resource: "widgets", Namespace: "shop-copy", Name: "blue"}, Data: op.Data}
	if _, err := extensiontest.RestoreOperation(t, e, req, nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(e.dir, ".imports", "back", "shop-copy_blue.json"))
	if err != nil || string(got) != spec {
		t.Fatalf("import: %q, %v", got, err)
	}

	req.Item.Name = "red"
	_, err = extensiontest.RestoreOperation(t, e, req, nil)
	if err == nil || !strings.Contains(err.Error(), "backup nightly holds no export of Widget shop/red") {
		t.Fatalf("want the import refused, got %v", err)
	}
}
