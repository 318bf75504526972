package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
	"github.com/cairn-backup/cairn/starter"
)

// extensionResult is the JSON line of the extension benchmark.
type extensionResult struct {
	Benchmark   string  `json:"benchmark"`
	Machine     machine `json:"machine"`
	Objects     int     `json:"objects"`
	Namespaces  int     `json:"namespaces"`
	ObjectBytes int     `json:"objectBytes"`
	// PlainSeconds is the backup without the extension, ExtendedSeconds
	// the same backup with a no-op one registered for ConfigMaps.
	PlainSeconds    float64 `json:"plainSeconds"`
	ExtendedSeconds float64 `json:"extendedSeconds"`
	// RatioExtendedToPlain is what the extension costs the backup.
	RatioExtendedToPlain float64 `json:"ratioExtendedToPlain"`
	ExtensionCalls       int64   `json:"extensionCalls"`
	ItemsSent            int64   `json:"itemsSent"`
	WorkerPeakRSSMB      float64 `json:"workerPeakRssMB"`
	// HistoryEvents of the extended backup: bounded by types, however
	// many items the extension sees.
	HistoryEvents int `json:"historyEvents"`
}

// noop answers every item with itself, counting calls and items.
type noop struct{ calls, items atomic.Int64 }

func (n *noop) BackupItems(_ context.Context, req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
	n.calls.Add(1)
	n.items.Add(int64(len(req.Items)))
	return &extension.BackupItemsResponse{Items: make([]extension.BackupItemAnswer, len(req.Items))}, nil
}

// benchExtension backs the seeded ConfigMaps up twice: with the worker
// the set-up started, then with one that has a no-op extension
// registered for every ConfigMap, served by this process.
func benchExtension(ctx context.Context, s setup, n, namespaces, size int) error {
	res := extensionResult{Benchmark: "backup-extension-noop", Machine: thisMachine(), Objects: n, Namespaces: namespaces, ObjectBytes: size}
	spec := v1alpha1.BackupSpec{IncludedNamespaces: []string{"bench-*"}}
	var err error
	progress("backing up without the extension")
	spec.Name = "plain"
	if res.PlainSeconds, _, err = timedBackup(ctx, s, spec); err != nil {
		return err
	}
	s.worker.stop()

	doc := "apiVersion: cairn.io/v1alpha1\nkind: Extensions\nextensions:\n- name: noop\n  taskQueue: bench-noop\n  backup: {resources: [configmaps]}\n"
	file := filepath.Join(s.dir, "extensions.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		return err
	}
	worker, err := startProcess(filepath.Join(s.dir, "worker-extended.log"), s.cairnBin, "worker", "--temporal-address", s.temporalAddr,
		"--kubeconfig", s.kubeconfig, "--data-dir", filepath.Join(s.dir, "worker"), "--log-level", "warn", "--extensions", file)
	if err != nil {
		return err
	}
	defer worker.stop()
	ctx, stopWatching := watched(ctx, worker)
	defer stopWatching()
	ext := &noop{}
	w := sdkworker.New(s.tc, "bench-noop", sdkworker.Options{})
	extension.RegisterBackup(w, ext)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start the extension: %w", err)
	}
	defer w.Stop()

	progress("backing up with a no-op extension for ConfigMaps")
	spec.Name = "extended"
	var v *starter.BackupView
	if res.ExtendedSeconds, v, err = timedBackup(ctx, s, spec); err != nil {
		return err
	}
	res.RatioExtendedToPlain = res.ExtendedSeconds / res.PlainSeconds
	res.ExtensionCalls, res.ItemsSent = ext.calls.Load(), ext.items.Load()
	if _, res.HistoryEvents, err = phaseSeconds(ctx, s.tc, v.WorkflowID, false); err != nil {
		return err
	}
	if res.WorkerPeakRSSMB, err = worker.peakRSSMB(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// timedBackup runs a backup to its end and returns its start-to-close
// seconds as Temporal saw them.
func timedBackup(ctx context.Context, s setup, spec v1alpha1.BackupSpec) (float64, *starter.BackupView, error) {
	created, err := s.sc.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: spec})
	if err != nil {
		return 0, nil, err
	}
	v, seconds, err := waitDone(ctx, s, created)
	if err != nil {
		return 0, nil, err
	}
	if v.Phase != v1alpha1.PhaseCompleted {
		return 0, nil, fmt.Errorf("backup %s ended %s: %+v", spec.Name, v.Phase, v.Status)
	}
	return seconds, v, nil
}
