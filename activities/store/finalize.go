package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/tidwall/gjson"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/metrics"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// FinalizeBackup streams the collected parts into resources.tar.gz, writes
// results.json and logs.jsonl.gz, commits the backup by writing
// backup.json last, and then removes the intermediate state. Run again
// after backup.json exists, it only removes what is left and reports.
func (a *Activities) FinalizeBackup(ctx context.Context, in v1alpha1.FinalizeInput) (*v1alpha1.FinalizeResult, error) {
	run, err := runlog.Start(ctx, a.Locations, a.Log, in.Spec.Name, in.Spec.StorageLocation)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	res, err := a.finalize(ctx, run, in)
	if err != nil {
		// The next attempt joins this one's log chunk into the backup's.
		run.End()
		return nil, err
	}
	// Not run.End(): its log chunk would land in the prefix just removed.
	_ = run.Loc.Close()
	return res, nil
}

// finalize commits the backup, or finds it committed by this run, and
// removes the intermediate state.
func (a *Activities) finalize(ctx context.Context, run *runlog.Run, in v1alpha1.FinalizeInput) (*v1alpha1.FinalizeResult, error) {
	res, err := a.commit(ctx, run, in)
	if err != nil {
		return nil, err
	}
	if err := removeWork(ctx, run); err != nil {
		return nil, fmt.Errorf("remove intermediate state: %w", err)
	}
	return res, nil
}

// commit writes the backup's objects and backup.json last; a backup
// this run committed already is only reported.
func (a *Activities) commit(ctx context.Context, run *runlog.Run, in v1alpha1.FinalizeInput) (*v1alpha1.FinalizeResult, error) {
	keys := run.Keys

	var existing v1alpha1.BackupMetadata
	switch err := run.Loc.ReadJSON(ctx, keys.Metadata(), &existing); {
	case err == nil && (existing.WorkflowID != in.WorkRef || existing.RunID != in.RunID):
		// Only this run's own commit may end it: a backup.json that names
		// another run (or none) was planted, or the name was taken while
		// this run collected. Hiding that would call a foreign backup ours.
		msg := fmt.Sprintf("%s already holds backup %q, committed by another run (workflow %q, run %q); this run did not commit",
			in.Spec.StorageLocation, in.Spec.Name, existing.WorkflowID, existing.RunID)
		return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeBackupConflict, nil)
	case err == nil:
		run.Log.Info("Backup already committed")
		return &v1alpha1.FinalizeResult{Items: existing.Status.ItemsDone, TarballBytes: existing.Status.TarballBytes,
			CompletionTime: existing.Status.CompletionTime}, nil
	case !errors.Is(err, location.ErrNotFound):
		return nil, err
	}

	items, fromSegments, err := a.writeTarball(ctx, run, in.Status.StartTime)
	if err != nil {
		return nil, err
	}
	size, err := run.Loc.Size(ctx, keys.Resources())
	if err != nil {
		return nil, err
	}
	results, err := collectResults(ctx, run, in.Status.Skipped)
	if err != nil {
		return nil, err
	}
	extOps, err := extensionOperations(ctx, run)
	if err != nil {
		return nil, err
	}
	results.Errors = append(results.Errors, operationErrors(in.Status.Operations)...)
	results.Errors = append(results.Errors, operationErrors(extOps)...)
	hookErrs, hookWarnings := hookEntries(in.Status.Hooks)
	results.Errors = append(results.Errors, hookErrs...)
	results.Warnings = append(results.Warnings, hookWarnings...)
	if err := run.Loc.WriteJSON(ctx, keys.Results(), results); err != nil {
		return nil, err
	}
	if err := writeOperations(ctx, run, in.Status.Operations, extOps); err != nil {
		return nil, err
	}

	status := in.Status
	status.TarballBytes = size
	status.Warnings = len(results.Warnings)
	meta := v1alpha1.BackupMetadata{
		APIVersion: v1alpha1.MetadataAPIVersion, Kind: v1alpha1.MetadataKindBackup,
		Name: in.Spec.Name, FormatVersion: tarball.FormatVersion,
		Spec: in.Spec, Status: status, WorkflowID: in.WorkRef, RunID: in.RunID, EncryptionKeyID: run.Loc.KeyID(),
	}
	run.Log.Info("Committing backup", zap.Int("items", items), zap.Int("partsFromSegments", fromSegments), zap.Int64("tarballBytes", size),
		zap.Int("errors", len(results.Errors)), zap.Int("warnings", len(results.Warnings)), zap.String("phase", string(status.Phase)))
	if err := run.JoinLogs(ctx, keys.LogsPrefix(), keys.Logs()); err != nil {
		return nil, err
	}
	manifest, err := run.Loc.WriteManifest(ctx, keys, keys.Stored(), func(n int64) { activity.RecordHeartbeat(ctx, n) })
	if err != nil {
		return nil, err
	}
	meta.ManifestSHA256 = manifest
	// The backup ends when it is committed, not when finalizing began.
	done := time.Now().UTC()
	meta.Status.CompletionTime = &done
	if lock := run.Loc.Lock(); lock != nil {
		until := lock.Until(done)
		meta.ImmutableUntil = &until
	}
	if err := run.Loc.WriteJSON(ctx, keys.Metadata(), meta); err != nil {
		return nil, err
	}
	metrics.RunEnded(v1alpha1.KindBackup, string(status.Phase), status.StartTime, &done, items)
	metrics.BackupBytes(size)
	return &v1alpha1.FinalizeResult{Items: items, TarballBytes: size, Warnings: len(results.Warnings), Errors: len(results.Errors),
		CompletionTime: &done}, nil
}

// writeTarball streams every part into the tarball, as the segment
// collection stored for it or else one line at a time, so memory stays
// flat whatever the number of items. An item that an operation's updated
// parts hold again is written from them only. fromSegments counts the
// parts spliced in as their segments.
func (a *Activities) writeTarball(ctx context.Context, run *runlog.Run, start *time.Time) (items, fromSegments int, err error) {
	parts, err := run.Loc.ModTimes(ctx, run.Keys.AllParts())
	if err != nil {
		return 0, 0, err
	}
	keys := slices.Sorted(maps.Keys(parts))
	updated, err := updatedItems(ctx, run, keys)
	if err != nil {
		return 0, 0, err
	}
	mtime := time.Unix(0, 0).UTC()
	if start != nil {
		mtime = *start
	}
	w, err := run.Loc.NewWriter(ctx, run.Keys.Resources())
	if err != nil {
		return 0, 0, err
	}
	tw, err := tarball.NewWriter(w, mtime)
	if err != nil {
		w.Abort()
		return 0, 0, err
	}
	segments, err := run.Loc.ModTimes(ctx, run.Keys.AllSegments())
	if err != nil {
		w.Abort()
		return 0, 0, err
	}
	// The segment each part is written from, "" for its lines.
	spliceFrom := make([]string, len(keys))
	var spliced []string
	for i, key := range keys {
		// A segment is stored after its part: one older than its part was
		// left by an attempt whose part a later one (a worker from before
		// segments) stored again without it. Only an item of a collected
		// part can have been read again, and a segment holds every item
		// of its part.
		segment := run.Keys.Segment(key)
		written, found := segments[segment]
		mayBeUpdated := len(updated) > 0 && !run.Keys.IsUpdatedPart(key)
		if found && !written.Before(parts[key]) && !mayBeUpdated {
			spliceFrom[i] = segment
			spliced = append(spliced, segment)
		}
	}
	opener := openSegments(ctx, run.Loc.NewReader, spliced)
	defer opener.stop()
	splicedParts := 0
	for i, key := range keys {
		var segment io.ReadCloser
		if spliceFrom[i] != "" {
			if segment, err = opener.take(); err != nil {
				w.Abort()
				return 0, 0, err
			}
		}
		spliced, err := writePart(ctx, run, tw, key, segment, updated)
		if err != nil {
			w.Abort()
			return 0, 0, err
		}
		if spliced {
			splicedParts++
		}
		activity.RecordHeartbeat(ctx, i)
	}
	if err := tw.Close(); err != nil {
		w.Abort()
		return 0, 0, fmt.Errorf("finish tarball: %w", err)
	}
	if err := w.Close(); err != nil {
		return 0, 0, fmt.Errorf("store tarball: %w", err)
	}
	return tw.Items, splicedParts, nil
}

// writePart writes a part's items into the tarball: its segment, when
// there is one (nil when not) made for this tarball, else its lines.
// spliced tells which. It closes the segment.
func writePart(ctx context.Context, run *runlog.Run, tw *tarball.Writer, key string, segment io.ReadCloser,
	updated map[string]bool) (spliced bool, err error) {
	gr := run.Keys.GroupResourceOfPart(key)
	mayBeUpdated := len(updated) > 0 && !run.Keys.IsUpdatedPart(key)
	if segment != nil {
		spliced, err := tw.AppendSegment(segment)
		_ = segment.Close() // read only
		if err != nil || spliced {
			return spliced, err
		}
	}
	// Add copies the line into the tarball: it need not outlive the call.
	return false, run.Loc.ReadLinesTransient(ctx, key, func(line []byte) error {
		// Parts hold valid JSON written by collection; only three
		// fields are needed, so the object is not decoded.
		head := gjson.GetManyBytes(line, "apiVersion", "metadata.name", "metadata.namespace")
		apiVersion, name, namespace := head[0].String(), head[1].String(), head[2].String()
		if apiVersion == "" || name == "" {
			return fmt.Errorf("item in %s has no apiVersion or name", key)
		}
		version := tarball.VersionOf(apiVersion)
		if mayBeUpdated && updated[gr+"/"+namespace+"/"+name] {
			return nil
		}
		return tw.Add(gr, version, namespace, name, line)
	})
}

// updatedItems are the items the updated parts among keys hold, as
// "group-resource/namespace/name": as many as operations asked to read
// again, never every item.
func updatedItems(ctx context.Context, run *runlog.Run, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, key := range keys {
		if !run.Keys.IsUpdatedPart(key) {
			continue
		}
		gr := run.Keys.GroupResourceOfPart(key)
		err := run.Loc.ReadLines(ctx, key, func(line []byte) error {
			head := gjson.GetManyBytes(line, "metadata.namespace", "metadata.name")
			out[gr+"/"+head[0].String()+"/"+head[1].String()] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func collectResults(ctx context.Context, run *runlog.Run, skipped []v1alpha1.SkippedResource) (*v1alpha1.BackupResults, error) {
	keys, err := run.Loc.Keys(ctx, run.Keys.TypeResults())
	if err != nil {
		return nil, err
	}
	res := &v1alpha1.BackupResults{Errors: []v1alpha1.ResultEntry{}, Warnings: []v1alpha1.ResultEntry{}, Skipped: skipped}
	for _, key := range keys {
		var tr cluster.TypeResult
		if err := run.Loc.ReadJSON(ctx, key, &tr); err != nil {
			return nil, err
		}
		for _, e := range tr.Errors {
			res.Errors = append(res.Errors, v1alpha1.ResultEntry{Resource: tr.Resource, Message: e})
		}
		for _, w := range tr.Warnings {
			res.Warnings = append(res.Warnings, v1alpha1.ResultEntry{Resource: tr.Resource, Message: w})
		}
		for _, x := range tr.Excluded {
			res.Excluded = append(res.Excluded, v1alpha1.ResultEntry{Resource: tr.Resource, Namespace: x.Namespace, Name: x.Name,
				Message: "labelled " + x.Label + "=true"})
		}
		if more := tr.ExcludedTotal - len(tr.Excluded); more > 0 {
			res.Excluded = append(res.Excluded, v1alpha1.ResultEntry{Resource: tr.Resource,
				Message: fmt.Sprintf("%d more labelled to be excluded", more)})
		}
	}
	return res, nil
}
