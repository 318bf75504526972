// Command bench measures cairn against plain client-go in the same run and
// prints one JSON line with the ratio and the worker's peak RSS:
//
//	-kind backup   a backup of N ConfigMaps (~1 KiB each, spread over
//	               namespaces) against a paged LIST of the same objects
//	-kind restore  a restore of that backup into an empty sandbox cluster
//	               against a create loop of the same objects at the
//	               restore's concurrency
//
//	-kind extension a backup of the ConfigMaps with a no-op extension
//	               registered for them, against the same backup without
//
//	-kind datapath cairn's volume data path (the data mover's kopia upload
//	               and restore) against the kopia command line on a data
//	               set of -data-mb MiB, and the re-upload of the unchanged set
//
//	-kind fs       a file-system backup of -data-mb MiB in a pod's emptyDir
//	               on the sandbox's node (root) against the kopia command
//	               line's snapshot of the same directory
//
//	go run ./tests/bench -cairn bin/cairn -n 10000 [-kind restore]
//	go run ./tests/bench -kind datapath -kopia .cache/kopia/bin/kopia -data-mb 2048
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	collect "github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/dev/sandbox"
	"github.com/cairn-backup/cairn/internal/logging"
	"github.com/cairn-backup/cairn/starter"
)

// result is the JSON line the benchmark prints.
type result struct {
	Benchmark   string  `json:"benchmark"`
	Machine     machine `json:"machine"`
	Objects     int     `json:"objects"`
	Namespaces  int     `json:"namespaces"`
	ObjectBytes int     `json:"objectBytes"`
	BackupItems int     `json:"backupItems"`
	// BackupSeconds and ListSeconds are the medians of Rounds runs
	// each, one of each per round (BackupRuns, ListRuns).
	BackupSeconds     float64 `json:"backupSeconds"`
	ItemsPerSecond    float64 `json:"itemsPerSecond"`
	ListSeconds       float64 `json:"listSeconds"`
	RatioBackupToList float64 `json:"ratioBackupToList"`
	// RatioPerRound is the median of each round's backup over the same
	// round's LIST: the two run seconds apart, so the machine's drift
	// (a third from minute to minute here) weighs on both alike.
	RatioPerRound float64   `json:"ratioPerRound"`
	Rounds        int       `json:"rounds"`
	BackupRuns    []float64 `json:"backupRuns"`
	ListRuns      []float64 `json:"listRuns"`
	ListJSONRuns  []float64 `json:"listJsonRuns"`
	// ListByNamespace: the backup lists the ConfigMaps namespace by
	// namespace, and so does the reference. ListClusterWideSeconds is then
	// a cluster-wide LIST of them too, for comparison, up to
	// maxClusterWideList objects.
	ListByNamespace        bool    `json:"listByNamespace"`
	ListClusterWideSeconds float64 `json:"listClusterWideSeconds,omitempty"`
	// ListJSONSeconds is the same LIST read as bytes, not decoded into
	// client-go's types as the reference (a typed clientset, which asks
	// for JSON too) does: what the API server takes to send what a
	// backup stores.
	ListJSONSeconds float64 `json:"listJsonSeconds"`
	WorkerPeakRSSMB float64 `json:"workerPeakRssMB"`
	TarballBytes    int64   `json:"tarballBytes"`
	SeedSeconds     float64 `json:"seedSeconds"`
	// PhaseSeconds is the backup's time per activity kind (plan, collect, finalize).
	PhaseSeconds map[string]float64 `json:"phaseSeconds"`
	// HistoryEvents is the length of the backup's history: bounded by
	// resource types, not by objects.
	HistoryEvents int `json:"historyEvents"`
}

func main() {
	cairn := flag.String("cairn", "bin/cairn", "the cairn binary to run as Temporal server and worker")
	n := flag.Int("n", 10000, "ConfigMaps to seed")
	namespaces := flag.Int("namespaces", 100, "namespaces to spread them over")
	size := flag.Int("size", 1024, "approximate bytes of data per ConfigMap")
	kind := flag.String("kind", "backup", "what to measure: backup, restore, extension, datapath or fs")
	kopiaCLI := flag.String("kopia", ".cache/kopia/bin/kopia", "datapath: the kopia command line to compare with")
	dataMB := flag.Int("data-mb", 2048, "datapath: size of the data set")
	// The datapath benchmark runs each of cairn's sides in a child
	// process of this binary (-kind datapath-child).
	op := flag.String("op", "", "datapath-child: init, upload or restore")
	location := flag.String("location", "", "datapath-child: backup location URL")
	configDir := flag.String("config", "", "datapath-child: kopia config directory")
	path := flag.String("path", "", "datapath-child: directory to upload or restore into")
	backup := flag.String("backup", "", "datapath-child: backup the upload belongs to")
	snapshotID := flag.String("snapshot", "", "datapath-child: snapshot to restore")
	profile := flag.String("worker-profile", "", "backup, restore: write a CPU profile of the worker, taken while it backs up or restores, to this file")
	profileSeconds := flag.Int("profile-seconds", 3, "backup, restore: how long the -worker-profile profile runs, from the run's start")
	timeline := flag.Bool("timeline", false, "backup, restore: print the first run's history, each event with its time from the start, to stderr")
	rounds := flag.Int("rounds", 0, "backup: backups and reference LISTs to take the medians of (0: 3 up to 100,000 objects, else 1)")
	flag.Parse()
	// Interrupted or told to stop, the bench stops what it started and
	// removes its directory: without this, SIGTERM (timeout(1), a CI
	// job's end) left the sandbox, Temporal and the worker running.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch *kind {
	case "backup", "restore", "extension":
		err = run(ctx, *cairn, *kind, *n, *namespaces, *size, fsConfig{}, profiling{path: *profile, seconds: *profileSeconds, timeline: *timeline}, roundsFor(*rounds, *n))
	case "fs":
		err = run(ctx, *cairn, *kind, 0, 0, 0, fsConfig{kopiaCLI: *kopiaCLI, dataMB: *dataMB}, profiling{}, 1)
	case "datapath":
		var self string
		if self, err = os.Executable(); err == nil {
			err = benchDatapath(self, *kopiaCLI, *dataMB)
		}
	case "datapath-child":
		err = datapathChild(*op, *location, *configDir, *path, *backup, *snapshotID)
	default:
		fmt.Fprintln(os.Stderr, "bench: -kind must be backup, restore, extension, datapath or fs")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// roundsFor is the rounds asked for, or by default as many as fit a
// few minutes: a million objects take a minute a backup.
func roundsFor(asked, n int) int {
	switch {
	case asked > 0:
		return asked
	case n <= 100_000:
		return 3
	}
	return 1
}

func run(ctx context.Context, cairnBin, kind string, n, namespaces, size int, fs fsConfig, prof profiling, rounds int) error {
	dir, err := os.MkdirTemp("", "cairn-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cairnBin, err = filepath.Abs(cairnBin)
	if err != nil {
		return err
	}
	binDir, err := sandbox.DefaultBinDir()
	if err != nil {
		return fmt.Errorf("%w (run `make sandbox-bins`)", err)
	}
	log, err := logging.New("warn", "console")
	if err != nil {
		return err
	}
	opts := sandbox.Options{BinDir: binDir, DataDir: filepath.Join(dir, "sandbox"), Log: log}
	if n > 200_000 {
		// A million ConfigMaps of a KiB are over 1 GiB in etcd, whose
		// default quota is 2 GiB.
		opts.EtcdQuotaBytes = 8 << 30
	}
	// A file-system backup reads a pod's volume on the node.
	opts.CSI, opts.Node = kind == "fs", kind == "fs"
	if kind == "fs" {
		// Restored pods wait for their data in an init container of
		// cairn's image.
		opts.CairnBinary = cairnBin
	}
	cluster, err := sandbox.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer cluster.Stop()

	res := result{Machine: thisMachine(), Benchmark: "backup-configmaps", Objects: n, Namespaces: namespaces, ObjectBytes: size}
	if n > 0 {
		progress("seeding %d ConfigMaps in %d namespaces", n, namespaces)
		start := time.Now()
		if err := seed(ctx, cluster.Config(), "bench", n, namespaces, size, 32); err != nil {
			return err
		}
		res.SeedSeconds = time.Since(start).Seconds()
	}

	temporalAddr, err := freeAddr()
	if err != nil {
		return err
	}
	temporal, err := startProcess(filepath.Join(dir, "temporal.log"), cairnBin, "dev", "--no-worker", "--no-api", "--ui-address", "",
		"--data-dir", filepath.Join(dir, "cairn"), "--temporal-address", temporalAddr, "--log-level", "warn")
	if err != nil {
		return err
	}
	defer temporal.stop()
	ctx, stopWatching := watched(ctx, temporal)
	defer stopWatching()
	tc, err := dialTemporal(ctx, temporalAddr)
	if err != nil {
		return err
	}
	defer tc.Close()
	// Its own data directory: the default, ./.cairn, may be the demo's,
	// with settings (an encryption key) a bench worker cannot start with.
	workerArgs := []string{"worker", "--temporal-address", temporalAddr,
		"--kubeconfig", cluster.KubeconfigPath(), "--data-dir", filepath.Join(dir, "worker"), "--log-level", "warn"}
	if kind == "fs" {
		fs.rest, fs.moverStateDir = cluster.Config(), filepath.Join(dir, "datamovers")
		more, err := fsWorkerArgs(dir, cluster, fs.moverStateDir)
		if err != nil {
			return err
		}
		workerArgs = append(workerArgs, more...)
	}
	if err := prof.listen(); err != nil {
		return err
	}
	worker, err := startProcess(filepath.Join(dir, "worker.log"), cairnBin, append(workerArgs, prof.workerArgs()...)...)
	if err != nil {
		return err
	}
	defer worker.stop()
	ctx, stopWatchingWorker := watched(ctx, worker)
	defer stopWatchingWorker()

	location := "file://" + filepath.Join(dir, "location")
	sc := starter.New(tc, starter.Options{DefaultLocation: location})
	s := setup{dir: dir, cairnBin: cairnBin, binDir: binDir, log: log, temporalAddr: temporalAddr, kubeconfig: cluster.KubeconfigPath(),
		tc: tc, sc: sc, worker: worker, prof: prof}
	switch kind {
	case "restore":
		return benchRestore(ctx, s, n, namespaces, size)
	case "extension":
		return benchExtension(ctx, s, n, namespaces, size)
	case "fs":
		return benchFS(ctx, s, fs)
	}

	res.ListByNamespace = collect.ListsByNamespace(n, namespaces)
	if err := benchBackup(ctx, s, cluster.Config(), &res, rounds); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// maxClusterWideList bounds the comparison's cluster-wide LIST: its time
// grows with the square of the objects, and past a few hundred thousand
// its continue token expires.
const maxClusterWideList = 200_000

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}
