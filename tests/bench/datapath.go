package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
)

// datapathResult is the JSON line of -kind datapath: cairn's data path
// (the data mover's kopia upload and restore) against the kopia command
// line on the same data, into fresh repositories on the same disk.
type datapathResult struct {
	Benchmark  string  `json:"benchmark"`
	Machine    machine `json:"machine"`
	DataBytes  int64   `json:"dataBytes"`
	LargeFiles int     `json:"largeFiles"`
	SmallFiles int     `json:"smallFiles"`
	KopiaCLI   string  `json:"kopiaCli"`
	UploadMBps float64 `json:"uploadMBps"`
	// KopiaUploadMBps is `kopia snapshot create` on the same data.
	KopiaUploadMBps    float64 `json:"kopiaUploadMBps"`
	RatioUploadToKopia float64 `json:"ratioUploadToKopia"`
	// RebackupSeconds is cairn's upload of the unchanged set, incremental
	// to the first; RatioRebackupToFirst its share of the first's time.
	UploadSeconds        float64 `json:"uploadSeconds"`
	RebackupSeconds      float64 `json:"rebackupSeconds"`
	RatioRebackupToFirst float64 `json:"ratioRebackupToFirst"`
	RestoreMBps          float64 `json:"restoreMBps"`
	// KopiaRestoreMBps is `kopia snapshot restore` of the CLI's snapshot.
	KopiaRestoreMBps    float64 `json:"kopiaRestoreMBps"`
	RatioRestoreToKopia float64 `json:"ratioRestoreToKopia"`
	// The restore speeds are medians of RestoreRounds restores on each
	// side, taken in turns; each one's seconds are kept.
	RestoreRounds       int       `json:"restoreRounds"`
	RestoreSeconds      []float64 `json:"restoreSeconds"`
	KopiaRestoreSeconds []float64 `json:"kopiaRestoreSeconds"`
	RestoreIdentical    bool      `json:"restoreIdentical"`
	PeakRSSMB           struct {
		Upload       float64 `json:"upload"`
		KopiaUpload  float64 `json:"kopiaUpload"`
		Restore      float64 `json:"restore"`
		KopiaRestore float64 `json:"kopiaRestore"`
	} `json:"peakRssMB"`
}

const benchPassword = "bench password"

// benchDatapath writes the data set, then times each side in a child
// process of its own, so each peak RSS is that side's alone.
func benchDatapath(self, kopiaCLI string, dataMB int) error {
	dir, err := os.MkdirTemp("", "cairn-bench-data-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "data")
	spec := dataSet(dataMB, 1)
	progress("writing %d MiB: %d large files, %d small files", dataMB, spec.LargeFiles, spec.SmallFiles)
	if _, err := datatree.Write(src, spec); err != nil {
		return err
	}
	res := datapathResult{Machine: thisMachine(), Benchmark: "datapath-kopia", LargeFiles: spec.LargeFiles, SmallFiles: spec.SmallFiles, KopiaCLI: kopiaCLI}
	if res.DataBytes, err = datatree.Bytes(src); err != nil {
		return err
	}
	mb := float64(res.DataBytes) / (1 << 20)

	progress("kopia CLI: snapshot create")
	kopia, err := kopiaRepository(kopiaCLI, dir)
	if err != nil {
		return err
	}
	kUp, out, err := timed(kopia("snapshot", "create", src, "--json"))
	if err != nil {
		return err
	}
	var kman struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &kman); err != nil || kman.ID == "" {
		return fmt.Errorf("kopia snapshot create printed no snapshot: %w: %.300s", err, out)
	}
	res.KopiaUploadMBps, res.PeakRSSMB.KopiaUpload = mb/kUp.seconds, kUp.rssMB

	progress("cairn: upload")
	location := "file://" + filepath.Join(dir, "location")
	child := func(args ...string) *exec.Cmd {
		return exec.Command(self, append([]string{"-kind", "datapath-child", "-location", location, "-config", filepath.Join(dir, "cairn-kopia")}, args...)...)
	}
	// Created outside the timing, as the CLI's repository was.
	if _, _, err := timed(child("-op", "init")); err != nil {
		return err
	}
	up, out, err := timed(child("-op", "upload", "-path", src, "-backup", "b1"))
	if err != nil {
		return err
	}
	var first kopiarepo.UploadResult
	if err := json.Unmarshal(out, &first); err != nil {
		return fmt.Errorf("upload child: %w: %.300s", err, out)
	}
	res.UploadSeconds, res.UploadMBps, res.PeakRSSMB.Upload = up.seconds, mb/up.seconds, up.rssMB
	res.RatioUploadToKopia = res.UploadMBps / res.KopiaUploadMBps

	progress("cairn: re-upload of the unchanged set")
	again, _, err := timed(child("-op", "upload", "-path", src, "-backup", "b2"))
	if err != nil {
		return err
	}
	res.RebackupSeconds, res.RatioRebackupToFirst = again.seconds, again.seconds/up.seconds

	// Each restore writes into a directory of its own: deleting the one
	// before would have the file system look through the freed inodes
	// while the next restore creates its files.
	restoredIn := func(round int) string { return filepath.Join(dir, fmt.Sprintf("restored-%d", round)) }
	type side struct {
		name    string
		restore func(round int) *exec.Cmd
		seconds *[]float64
		rssMB   *float64
	}
	cli := side{"kopia CLI", func(round int) *exec.Cmd {
		return kopia("snapshot", "restore", kman.ID, filepath.Join(dir, fmt.Sprintf("restored-cli-%d", round)))
	}, &res.KopiaRestoreSeconds, &res.PeakRSSMB.KopiaRestore}
	cairn := side{"cairn", func(round int) *exec.Cmd {
		return child("-op", "restore", "-path", restoredIn(round), "-snapshot", first.SnapshotID)
	}, &res.RestoreSeconds, &res.PeakRSSMB.Restore}
	// Each side goes first in turn: neither always finds the page cache
	// full of the other's files.
	res.RestoreRounds = 3
	for round := range res.RestoreRounds {
		order := []side{cli, cairn}
		if round%2 == 1 {
			order = []side{cairn, cli}
		}
		for _, s := range order {
			progress("%s: restore, round %d", s.name, round+1)
			m, _, err := timed(s.restore(round))
			if err != nil {
				return err
			}
			*s.seconds = append(*s.seconds, m.seconds)
			*s.rssMB = max(*s.rssMB, m.rssMB)
		}
	}
	res.KopiaRestoreMBps = mb / median(res.KopiaRestoreSeconds)
	res.RestoreMBps = mb / median(res.RestoreSeconds)
	res.RatioRestoreToKopia = res.RestoreMBps / res.KopiaRestoreMBps
	want, err := datatree.Digest(src)
	if err != nil {
		return err
	}
	got, err := datatree.Digest(restoredIn(res.RestoreRounds - 1))
	if err != nil {
		return err
	}
	res.RestoreIdentical = len(datatree.Diff(want, got, 1)) == 0
	return json.NewEncoder(os.Stdout).Encode(res)
}

// dataSet is the benchmarks' data of dataMB MiB: a few large random
// files hold 7/8 of it, ~20,000 small ones (for 2 GiB) the rest.
func dataSet(dataMB int, seed uint64) datatree.Spec {
	smallFiles := max(100, dataMB*10)
	return datatree.Spec{LargeFiles: 4, LargeSize: int64(dataMB) << 20 * 7 / 8 / 4, SmallFiles: smallFiles,
		SmallSize: (dataMB << 20 / 8) / smallFiles * 2, Seed: seed, NoSparse: true}
}

// kopiaRepository creates a repository of the kopia command line cli
// under dir (outside any timing) and returns how to run the command
// line against it.
func kopiaRepository(cli, dir string) (func(args ...string) *exec.Cmd, error) {
	kcfg := filepath.Join(dir, "kopia-cli", "repository.config")
	kopia := func(args ...string) *exec.Cmd {
		cmd := exec.Command(cli, append(args, "--config-file", kcfg, "--password", benchPassword,
			"--no-progress", "--log-dir", filepath.Join(dir, "kopia-cli", "logs"))...)
		cmd.Env = append(os.Environ(), "KOPIA_CHECK_FOR_UPDATES=false")
		return cmd
	}
	// The cache too goes under dir: kopia's default, ~/.cache/kopia, would
	// keep a GiB of every run's restored data after the run.
	create := kopia("repository", "create", "filesystem", "--path", filepath.Join(dir, "repo-cli"),
		"--cache-directory", filepath.Join(dir, "kopia-cli", "cache"))
	if out, err := create.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kopia repository create: %w: %s", err, out)
	}
	return kopia, nil
}

type measured struct {
	seconds, rssMB float64
}

// timed runs cmd, returning its wall time, peak RSS and stdout. What the
// steps before wrote is flushed to disk first: its write-back is not
// cmd's cost.
func timed(cmd *exec.Cmd) (measured, []byte, error) {
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	syscall.Sync()
	start := time.Now()
	out, err := cmd.Output()
	m := measured{seconds: time.Since(start).Seconds()}
	if err != nil {
		return m, out, fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Path), err, stderr.String())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.rssMB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return m, out, nil
}

// limitedBuffer keeps the last 4 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if len(l.b) > 4096 {
		l.b = l.b[len(l.b)-4096:]
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

// datapathChild is one side of the benchmark in its own process: cairn's
// upload or restore, exactly as the data mover calls it.
func datapathChild(op, location, configDir, path, backup, snapshotID string) error {
	ctx := context.Background()
	repo, err := kopiarepo.Open(ctx, kopiarepo.Config{Location: location, Password: benchPassword, ConfigDir: configDir, Hostname: "bench",
		Uncached: op == "restore"})
	if err != nil {
		return err
	}
	defer repo.Close(ctx)
	var res any
	switch op {
	case "init":
		res = "created"
	case "upload":
		res, err = repo.Upload(ctx, kopiarepo.UploadRequest{Path: path, Namespace: "bench", Claim: "data", Backup: backup})
	case "restore":
		res, err = repo.Restore(ctx, kopiarepo.RestoreRequest{SnapshotID: snapshotID, Path: path})
	default:
		err = fmt.Errorf("unknown op %q", op)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}
