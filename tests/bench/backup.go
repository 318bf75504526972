package main

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/rest"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// benchBackup measures rounds backups of the seeded ConfigMaps against
// as many plain LISTs of them, one of each per round, so that what the
// machine does meanwhile weighs on both; the ratio is of the medians.
// One LIST alone varied by a third from run to run.
func benchBackup(ctx context.Context, s setup, cfg *rest.Config, res *result, rounds int) error {
	namespaces := res.Namespaces
	var runs []backupRun
	for round := 1; round <= rounds; round++ {
		listed, listTime, err := plainList(ctx, cfg, "bench", namespaces, res.ListByNamespace)
		if err != nil {
			return err
		}
		res.ListRuns = append(res.ListRuns, listTime.Seconds())
		progress("round %d: plain LIST (by namespace: %t): %d ConfigMaps in %.2fs", round, res.ListByNamespace, listed, listTime.Seconds())
		jsonTime, err := rawJSONList(ctx, cfg, "bench", namespaces, res.ListByNamespace)
		if err != nil {
			return err
		}
		res.ListJSONRuns = append(res.ListJSONRuns, jsonTime.Seconds())
		progress("round %d: plain LIST in JSON: %.2fs", round, jsonTime.Seconds())
		if round == 1 && res.ListByNamespace && res.Objects <= maxClusterWideList {
			_, wide, err := plainList(ctx, cfg, "bench", namespaces, false)
			if err != nil {
				return err
			}
			res.ListClusterWideSeconds = wide.Seconds()
			progress("plain LIST cluster-wide: %.2fs", res.ListClusterWideSeconds)
		}
		progress("round %d: backing up", round)
		run, err := backupOnce(ctx, s, fmt.Sprintf("bench-%d", round), round == 1)
		if err != nil {
			return err
		}
		runs = append(runs, run)
		res.BackupRuns = append(res.BackupRuns, run.seconds)
		progress("round %d: backup in %.2fs", round, run.seconds)
	}
	res.Rounds = rounds
	res.BackupSeconds, res.ListSeconds, res.ListJSONSeconds = median(res.BackupRuns), median(res.ListRuns), median(res.ListJSONRuns)
	// The items, phases and history are the median backup's.
	i := slices.Index(res.BackupRuns, res.BackupSeconds)
	res.BackupItems, res.TarballBytes, res.PhaseSeconds, res.HistoryEvents = runs[i].items, runs[i].tarballBytes, runs[i].phases, runs[i].history
	res.ItemsPerSecond = float64(res.BackupItems) / res.BackupSeconds
	res.RatioBackupToList = res.BackupSeconds / res.ListSeconds
	perRound := make([]float64, rounds)
	for i := range perRound {
		perRound[i] = res.BackupRuns[i] / res.ListRuns[i]
	}
	res.RatioPerRound = median(perRound)
	var err error
	res.WorkerPeakRSSMB, err = s.worker.peakRSSMB()
	return err
}

// backupRun is what one backup of the benchmark measured.
type backupRun struct {
	seconds      float64
	items        int
	tarballBytes int64
	phases       map[string]float64
	history      int
}

// backupOnce backs up the cluster as name and measures the run; the
// first round's is profiled when a profile is asked for.
func backupOnce(ctx context.Context, s setup, name string, profile bool) (backupRun, error) {
	profiled := func() error { return nil }
	if profile {
		var err error
		if profiled, err = s.prof.start(ctx); err != nil {
			return backupRun{}, err
		}
	}
	created, err := s.sc.CreateBackup(ctx, starter.CreateBackupRequest{BackupSpec: v1alpha1.BackupSpec{Name: name}})
	if err != nil {
		return backupRun{}, err
	}
	v, seconds, err := waitDone(ctx, s, created)
	if err != nil {
		return backupRun{}, err
	}
	if err := profiled(); err != nil {
		return backupRun{}, err
	}
	if v.Phase != v1alpha1.PhaseCompleted || v.Status == nil || v.Status.StartTime == nil || v.Status.CompletionTime == nil {
		return backupRun{}, fmt.Errorf("backup %s ended %s: %+v", name, v.Phase, v.Status)
	}
	run := backupRun{seconds: seconds, items: v.Status.ItemsDone, tarballBytes: v.Status.TarballBytes}
	run.phases, run.history, err = phaseSeconds(ctx, s.tc, v.WorkflowID, profile && s.prof.timeline)
	return run, err
}

// median of the values (the lower middle one of an even count).
func median(values []float64) float64 {
	sorted := slices.Sorted(slices.Values(values))
	return sorted[(len(sorted)-1)/2]
}
