package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/activities/datamover"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/worker"
)

type datamoverFlags struct {
	taskQueue          string
	path               string
	markerDir          string
	configDir          string
	checkpointInterval time.Duration
	idleTimeout        time.Duration
	uploadLimit        float64
	downloadLimit      float64
	repo               repositoryFlags
}

func newDatamoverCommand(g *globals) *cobra.Command {
	f := &datamoverFlags{}
	cmd := &cobra.Command{
		Use:   "datamover",
		Short: "Move one volume's data into the backup location's kopia repository, or back (started by the worker)",
		Long: `A data mover hosts only the data path. The worker's exposer starts one per
volume operation where the volume's data is reachable: a pod that mounts a
claim made from the snapshot, or in the sandbox a local process. It polls the
operation's own --task-queue and runs one task, then exits (or after
--idle-timeout without one):

  - a backup's upload of the data under --path, checkpointing every
    --checkpoint-interval, so a new data mover resumes where a dead one
    stopped;
  - a restore's download of a kopia snapshot into the fresh volume under
    --path; a new data mover skips the files a dead one already wrote.

The repository password comes from $CAIRN_REPOSITORY_PASSWORD or
--repository-password-file; it is never logged.`,
		Example: `  CAIRN_REPOSITORY_PASSWORD=... cairn datamover --task-queue cairn-datamover-1a2b --path /data`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.taskQueue == "" || f.path == "" {
				return &usageError{fmt.Errorf("--task-queue and --path are required")}
			}
			log, err := g.logger()
			if err != nil {
				return err
			}
			password, err := f.repo.password()
			if err != nil {
				return err
			}
			opener, err := g.opener()
			if err != nil {
				return err
			}
			configDir := f.configDir
			if configDir == "" {
				configDir = filepath.Join(os.TempDir(), "cairn-datamover-"+f.taskQueue)
			}
			tc, err := g.dial(log)
			if err != nil {
				return err
			}
			defer tc.Close()
			hostname, _ := os.Hostname()
			log = log.Named("datamover")
			acts := &datamover.Activities{
				Path: f.path, MarkerDir: f.markerDir,
				Repository: kopiarepo.Config{Password: password, ConfigDir: configDir, Hostname: hostname, UploadBytesPerSecond: f.uploadLimit,
					DownloadBytesPerSecond: f.downloadLimit, Locations: opener},
				Log:                log,
				Locations:          opener,
				CheckpointInterval: f.checkpointInterval,
			}
			return worker.RunDataMover(cmd.Context(), tc, worker.DataMoverConfig{
				TaskQueue: f.taskQueue, Activities: acts, IdleTimeout: f.idleTimeout, Log: log,
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.taskQueue, "task-queue", "", "the volume operation's task queue (required)")
	fl.StringVar(&f.path, "path", "", "where the volume's data is mounted (required)")
	fl.StringVar(&f.markerDir, "marker-dir", "", "a restored pod's directory of markers, one per volume, its init container waits for (pod volume restores)")
	fl.StringVar(&f.configDir, "kopia-config-dir", "", "private directory for kopia's connection file and cache (default: a directory under $TMPDIR)")
	fl.DurationVar(&f.checkpointInterval, "checkpoint-interval", 30*time.Second, "how often an upload saves a checkpoint a retry resumes from")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 30*time.Minute, "exit when no task came this long after start")
	fl.Float64Var(&f.uploadLimit, "upload-bytes-per-second", 0, "cap on writes to the repository storage, to spare a shared link (0: none)")
	fl.Float64Var(&f.downloadLimit, "download-bytes-per-second", 0, "cap on reads from the repository storage during a restore (0: none)")
	f.repo.register(fl, false)
	return cmd
}
