package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/starter"
)

// restoreResult is the JSON line of the restore benchmark.
type restoreResult struct {
	Benchmark         string  `json:"benchmark"`
	Machine           machine `json:"machine"`
	Objects           int     `json:"objects"`
	Namespaces        int     `json:"namespaces"`
	ObjectBytes       int     `json:"objectBytes"`
	Concurrency       int     `json:"concurrency"`
	RestoredItems     int     `json:"restoredItems"`
	RestoreSeconds    float64 `json:"restoreSeconds"`
	ItemsPerSecond    float64 `json:"itemsPerSecond"`
	CreateLoopSeconds float64 `json:"createLoopSeconds"`
	// RatioRestoreToCreateLoop is the restore's time over the plain loop's.
	RatioRestoreToCreateLoop float64            `json:"ratioRestoreToCreateLoop"`
	WorkerPeakRSSMB          float64            `json:"workerPeakRssMB"`
	PhaseSeconds             map[string]float64 `json:"phaseSeconds"`
	// HistoryEvents is the length of the restore's history.
	HistoryEvents int `json:"historyEvents"`
}

// setup is what the common set-up hands the restore and extension
// benchmarks: a Temporal server, a worker on the seeded cluster, a
// starter client.
type setup struct {
	dir, cairnBin, binDir, temporalAddr string
	kubeconfig                          string
	log                                 *zap.Logger
	tc                                  client.Client
	sc                                  *starter.Client
	worker                              *process
	// prof, when it has a path, is a CPU profile of the worker that
	// restores, taken from the restore's start.
	prof profiling
}

// benchRestore backs up the seeded namespaces, then restores them into an
// empty second sandbox cluster (its own worker), against a plain create
// loop of the same objects at the same concurrency into another empty
// cluster.
func benchRestore(ctx context.Context, s setup, n, namespaces, size int) error {
	progress("backing up")
	backup := v1alpha1.BackupSpec{Name: "bench", IncludedNamespaces: []string{"bench-*"}}
	backed, err := s.sc.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: backup})
	if err != nil {
		return err
	}
	if v, _, err := waitDone(ctx, s, backed); err != nil {
		return err
	} else if v.Phase != v1alpha1.PhaseCompleted {
		return fmt.Errorf("backup ended %s: %+v", v.Phase, v.Status)
	}
	s.worker.stop() // the next worker serves the target cluster

	opts := v1alpha1.RestoreOptions{}.WithDefaults()
	res := restoreResult{Machine: thisMachine(), Benchmark: "restore-configmaps", Objects: n, Namespaces: namespaces, ObjectBytes: size, Concurrency: opts.Concurrency}
	// The loop and the restore each get a new cluster: one that holds
	// the other's objects already makes every create dearer.
	loop, err := createLoop(ctx, s, n, namespaces, size, opts.Concurrency)
	if err != nil {
		return err
	}
	res.CreateLoopSeconds = loop
	target, err := sandbox.Start(ctx, sandbox.Options{BinDir: s.binDir, DataDir: filepath.Join(s.dir, "target"), Log: s.log})
	if err != nil {
		return err
	}
	defer target.Stop()

	args := []string{"worker", "--temporal-address", s.temporalAddr,
		"--kubeconfig", target.KubeconfigPath(), "--data-dir", filepath.Join(s.dir, "target-worker"), "--log-level", "warn"}
	prof := s.prof // the restoring worker's, on an address of its own
	if err := prof.listen(); err != nil {
		return err
	}
	worker, err := startProcess(filepath.Join(s.dir, "target-worker.log"), s.cairnBin, append(args, prof.workerArgs()...)...)
	if err != nil {
		return err
	}
	defer worker.stop()
	ctx, stopWatching := watched(ctx, worker)
	defer stopWatching()
	if err := worker.polling(ctx, s.tc, v1alpha1.TaskQueue); err != nil {
		return err
	}
	progress("restoring")
	profiled, err := prof.start(ctx)
	if err != nil {
		return err
	}
	created, err := s.sc.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "bench-restore", BackupName: "bench"}})
	if err != nil {
		return err
	}
	if res.RestoreSeconds, err = runSeconds(ctx, s.tc, created.WorkflowID, created.RunID); err != nil {
		return err
	}
	if err := profiled(); err != nil {
		return err
	}
	v, err := s.sc.GetRestore(ctx, "bench-restore")
	if err != nil {
		return err
	}
	if v.Phase != v1alpha1.PhaseCompleted || v.Status == nil {
		return fmt.Errorf("restore ended %s: %+v", v.Phase, v.Status)
	}
	res.RestoredItems = v.Status.ItemsRestored
	if want := n + namespaces; res.RestoredItems != want {
		return fmt.Errorf("restore restored %d items, want %d", res.RestoredItems, want)
	}
	res.ItemsPerSecond = float64(res.RestoredItems) / res.RestoreSeconds
	res.RatioRestoreToCreateLoop = res.RestoreSeconds / res.CreateLoopSeconds
	if res.PhaseSeconds, res.HistoryEvents, err = phaseSeconds(ctx, s.tc, created.WorkflowID, s.prof.timeline); err != nil {
		return err
	}
	if res.WorkerPeakRSSMB, err = worker.peakRSSMB(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// createLoop is the reference: n ConfigMaps created in a new cluster by
// concurrency goroutines, in seconds.
func createLoop(ctx context.Context, s setup, n, namespaces, size, concurrency int) (float64, error) {
	cluster, err := sandbox.Start(ctx, sandbox.Options{BinDir: s.binDir, DataDir: filepath.Join(s.dir, "loop-target"), Log: s.log})
	if err != nil {
		return 0, err
	}
	defer cluster.Stop()
	progress("plain create loop of %d ConfigMaps at concurrency %d", n, concurrency)
	start := time.Now()
	if err := seed(ctx, cluster.Config(), "plain", n, namespaces, size, concurrency); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}
