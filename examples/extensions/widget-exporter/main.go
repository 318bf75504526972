// Command widget-exporter is an example cairn extension in Go: for every
// Widget (widgets.demo.cairn.io) a backup collects, it starts an async
// operation that exports the Widget's spec into a directory, asks cairn to
// back up the Widget's ConfigMap with it, and to read the Widget again
// once the export is done; for every Widget a restore creates, it waits
// until the Widget's ConfigMap is there, and starts an operation that
// imports the backup's export; when the backup is
// deleted, it deletes the exports. It imports only cairn's pkg/extension
// and Temporal's SDK, as an extension in its own module would.
//
//	widget-exporter --address 127.0.0.1:7233 --task-queue widgets --export-dir /srv/exports
//
// registered with cairn's worker by an extensions document:
//
//	apiVersion: cairn.io/v1alpha1
//	kind: Extensions
//	extensions:
//	- name: widgets
//	  taskQueue: widgets
//	  backup: {resources: [widgets.demo.cairn.io]}
//	  restore: {resources: [widgets.demo.cairn.io]}
//	  delete: {resources: [widgets.demo.cairn.io]}
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/cairn-backup/cairn/pkg/extension"
)

func main() {
	address := flag.String("address", "127.0.0.1:7233", "Temporal's frontend, host:port")
	namespace := flag.String("namespace", "default", "Temporal namespace cairn runs in")
	taskQueue := flag.String("task-queue", "widgets", "task queue the extension is registered with in cairn")
	exportDir := flag.String("export-dir", "", "directory the exports are written to (required)")
	chunks := flag.Int("chunks", 8, "chunks an export is written in, one heartbeat each")
	pause := flag.Duration("chunk-pause", 200*time.Millisecond, "pause after each chunk, to make an export take a while")
	waitTimeout := flag.Duration("wait-timeout", 5*time.Minute, "how long a restored Widget waits for its ConfigMap")
	holdWhile := flag.String("hold-while", "", "exports and imports wait after their first chunk, and deletions before they start, while this file exists (a demo or test holds them mid-way)")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("extension", "widget-exporter")
	if *exportDir == "" || *chunks < 1 {
		fmt.Fprintln(os.Stderr, "widget-exporter: --export-dir is required and --chunks must be at least 1")
		os.Exit(2)
	}
	c, err := client.Dial(client.Options{HostPort: *address, Namespace: *namespace})
	if err != nil {
		log.Error("Temporal unreachable", "error", err)
		os.Exit(1)
	}
	defer c.Close()
	w := worker.New(c, *taskQueue, worker.Options{})
	e := &exporter{dir: *exportDir, chunks: *chunks, pause: *pause, holdWhile: *holdWhile, waitTimeout: *waitTimeout, log: log}
	extension.RegisterBackup(w, e)
	extension.RegisterRestore(w, e)
	extension.RegisterDelete(w, e)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("Serving", "taskQueue", *taskQueue)
	if err := w.Run(ctxInterrupt(ctx)); err != nil {
		log.Error("Worker stopped", "error", err)
		os.Exit(1)
	}
}

// ctxInterrupt turns a context into the channel worker.Run stops on.
func ctxInterrupt(ctx context.Context) <-chan any {
	ch := make(chan any)
	go func() { <-ctx.Done(); close(ch) }()
	return ch
}

type exporter struct {
	dir         string
	chunks      int
	pause       time.Duration
	holdWhile   string
	waitTimeout time.Duration
	log         *slog.Logger
}

// widget is what the exporter reads of a Widget.
type widget struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

// exportData is what an answer hands to its operation.
type exportData struct {
	Spec json.RawMessage `json:"spec"`
}

// BackupItems starts an export per Widget; the Widget is stored as it is.
func (e *exporter) BackupItems(_ context.Context, req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
	resp := &extension.BackupItemsResponse{Items: make([]extension.BackupItemAnswer, len(req.Items))}
	for i, raw := range req.Items {
		var w widget
		if err := json.Unmarshal(raw, &w); err != nil {
			resp.Items[i].Error = "not a Widget: " + err.Error()
			continue
		}
		data, err := json.Marshal(exportData{Spec: w.Spec})
		if err != nil {
			return nil, err
		}
		self := extension.ObjectRef{Group: req.Resource.Group, Resource: req.Resource.Resource, Namespace: w.Metadata.Namespace, Name: w.Metadata.Name}
		resp.Items[i] = extension.BackupItemAnswer{
			AdditionalItems: []extension.ObjectRef{{Resource: "configmaps", Namespace: w.Metadata.Namespace, Name: w.Metadata.Name + "-config"}},
			Operation: &extension.OperationStart{ID: "export/" + w.Metadata.Namespace + "/" + w.Metadata.Name + "/" + w.Metadata.UID,
				ItemsToUpdate: []extension.ObjectRef{self}, Data: data},
		}
	}
	return resp, nil
}

// BackupOperation writes the Widget's spec into <dir>/<backup>/<ns>_<name>.json
// in chunks, heartbeating after each: a retried attempt resumes after the
// last chunk its heartbeat recorded, and a cancel removes what was written.
func (e *exporter) BackupOperation(ctx context.Context, req extension.BackupOperationRequest) (*extension.BackupOperationResult, error) {
	var data exportData
	if err := json.Unmarshal(req.Data, &data); err != nil {
		return nil, temporal.NewNonRetryableApplicationError("operation data is not an export's: "+err.Error(), extension.ErrTypeRefused, nil)
	}
	final := e.exportFile(req.Backup, req.Item.Namespace, req.Item.Name)
	log := e.log.With("operation", req.OperationID, "attempt", activity.GetInfo(ctx).Attempt)
	if err := e.writeInChunks(ctx, log, final, data.Spec, "exporting "+req.Item.Name); err != nil {
		return nil, err
	}
	log.Info("Exported", "file", final)
	return &extension.BackupOperationResult{Description: "exported to " + final}, nil
}

// importData is what a restore answer hands to its operation.
type importData struct {
	// SourceNamespace is the Widget's namespace in the backup.
	SourceNamespace string `json:"sourceNamespace"`
}

// RestoreItems starts an import per Widget, and holds each Widget back
// until its ConfigMap is there (restored before it, or made by hand when
// the restore leaves ConfigMaps out); the Widget is created as it is.
func (e *exporter) RestoreItems(_ context.Context, req extension.RestoreItemsRequest) (*extension.RestoreItemsResponse, error) {
	from := map[string]string{} // restored namespace → backed-up one
	for src, dst := range req.NamespaceMapping {
		from[dst] = src
	}
	resp := &extension.RestoreItemsResponse{Items: make([]extension.RestoreItemAnswer, len(req.Items))}
	for i, raw := range req.Items {
		var w widget
		if err := json.Unmarshal(raw, &w); err != nil {
			resp.Items[i].Error = "not a Widget: " + err.Error()
			continue
		}
		src := w.Metadata.Namespace
		if s, ok := from[src]; ok {
			src = s
		}
		data, err := json.Marshal(importData{SourceNamespace: src})
		if err != nil {
			return nil, err
		}
		resp.Items[i].Operation = &extension.OperationStart{ID: "import/" + w.Metadata.Namespace + "/" + w.Metadata.Name, Data: data}
		config := extension.ObjectRef{Resource: "configmaps", Namespace: w.Metadata.Namespace, Name: w.Metadata.Name + "-config"}
		resp.Items[i].WaitFor = &extension.WaitFor{Items: []extension.ObjectRef{config}, Timeout: e.waitTimeout.String()}
	}
	return resp, nil
}

// RestoreOperation imports a restored Widget's export from its backup
// into <dir>/.imports/<restore>/<ns>_<name>.json, in chunks as an export
// is written: a retried attempt resumes, a cancel removes what was
// written. A Widget whose backup holds no export is refused.
func (e *exporter) RestoreOperation(ctx context.Context, req extension.RestoreOperationRequest) (*extension.RestoreOperationResult, error) {
	var data importData
	if err := json.Unmarshal(req.Data, &data); err != nil {
		return nil, temporal.NewNonRetryableApplicationError("operation data is not an import's: "+err.Error(), extension.ErrTypeRefused, nil)
	}
	export, err := os.ReadFile(e.exportFile(req.Backup, data.SourceNamespace, req.Item.Name))
	if errors.Is(err, os.ErrNotExist) {
		msg := fmt.Sprintf("backup %s holds no export of Widget %s/%s", req.Backup, data.SourceNamespace, req.Item.Name)
		return nil, temporal.NewNonRetryableApplicationError(msg, extension.ErrTypeRefused, nil)
	}
	if err != nil {
		return nil, err
	}
	final := e.importFile(req.Restore, req.Item.Namespace, req.Item.Name)
	log := e.log.With("operation", req.OperationID, "attempt", activity.GetInfo(ctx).Attempt)
	if err := e.writeInChunks(ctx, log, final, export, "importing "+req.Item.Name); err != nil {
		return nil, err
	}
	log.Info("Imported", "file", final)
	return &extension.RestoreOperationResult{Description: "imported into " + final}, nil
}

// writeInChunks writes content into final through final+".part", in
// e.chunks chunks, heartbeating after each. An attempt that gets back
// the progress of the one before resumes after its last chunk (what it
// wrote after that is written again); a cancel removes the part file.
func (e *exporter) writeInChunks(ctx context.Context, log *slog.Logger, final string, content []byte, description string) error {
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return err
	}
	part := final + ".part"
	var progress extension.OperationProgress
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &progress); err != nil {
			progress = extension.OperationProgress{}
		}
	}
	log.Info("Writing", "file", final, "resumeAtChunk", progress.Done)
	f, err := os.OpenFile(part, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	// Closed below once the file is whole; this covers the early returns.
	defer func() { _ = f.Close() }()
	total := int64(e.chunks)
	size := (len(content) + e.chunks - 1) / e.chunks
	if err := f.Truncate(min(progress.Done*int64(size), int64(len(content)))); err != nil {
		return err
	}
	for chunk := progress.Done; chunk < total; chunk++ {
		if chunk > 0 {
			if err := e.hold(ctx, progress); err != nil {
				return e.canceled(part, log, err)
			}
		}
		from, to := min(int(chunk)*size, len(content)), min(int(chunk+1)*size, len(content))
		if _, err := f.WriteAt(content[from:to], int64(from)); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		progress = extension.OperationProgress{Done: chunk + 1, Total: total, Units: "chunks", Description: description}
		activity.RecordHeartbeat(ctx, progress)
		if err := sleep(ctx, e.pause); err != nil {
			return e.canceled(part, log, err)
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(part, final)
}

// exportFile is where the export of a backup's Widget goes.
func (e *exporter) exportFile(backup, namespace, name string) string {
	return filepath.Join(e.dir, filepath.Base(backup), filepath.Base(namespace+"_"+name)+".json")
}

// importFile is where a restored Widget's import goes: under a name no
// backup can have.
func (e *exporter) importFile(restore, namespace, name string) string {
	return filepath.Join(e.dir, ".imports", filepath.Base(restore), filepath.Base(namespace+"_"+name)+".json")
}

// DeleteItems deletes the exports of a deleted backup's Widgets; one
// already gone is deleted, so a retried deletion succeeds.
func (e *exporter) DeleteItems(ctx context.Context, req extension.DeleteItemsRequest) (*extension.DeleteItemsResponse, error) {
	if err := e.hold(ctx, extension.OperationProgress{}); err != nil {
		return nil, err
	}
	resp := &extension.DeleteItemsResponse{Items: make([]extension.DeleteItemAnswer, len(req.Items))}
	for i, raw := range req.Items {
		var w widget
		if err := json.Unmarshal(raw, &w); err != nil {
			resp.Items[i].Error = "not a Widget: " + err.Error()
			continue
		}
		file := e.exportFile(req.Backup, w.Metadata.Namespace, w.Metadata.Name)
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			resp.Items[i].Error = err.Error()
			continue
		}
		e.log.Info("Export deleted", "file", file)
	}
	// The backup's directory goes once its last export has.
	_ = os.Remove(filepath.Join(e.dir, filepath.Base(req.Backup)))
	return resp, nil
}

// hold waits while the hold file exists, heartbeating (the same
// progress: the heartbeat's details are where a retry resumes) so a
// cancel is heard.
func (e *exporter) hold(ctx context.Context, progress extension.OperationProgress) error {
	for e.holdWhile != "" {
		if _, err := os.Stat(e.holdWhile); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		activity.RecordHeartbeat(ctx, progress)
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// sleep waits for d, or until ctx ends (the operation canceled, or its
// worker stopping).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// canceled removes a canceled export's or import's partial file.
func (e *exporter) canceled(part string, log *slog.Logger, err error) error {
	log.Info("Export canceled", "reason", err)
	_ = os.Remove(part)
	return err
}
