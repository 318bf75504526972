package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/dustin/go-humanize"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

func newBackupGetCommand(g *globals) *cobra.Command {
	return newShowCommand(g, backups, "get NAME", "Show one backup as a table row (or its full record with -o json|yaml)",
		func(w io.Writer, v *starter.BackupView) { backupTable(w, []*starter.BackupView{v}) })
}

func newBackupDescribeCommand(g *globals) *cobra.Command {
	return newShowCommand(g, backups, "describe NAME", "Show a backup in detail: phase, counts per resource type, skipped types, errors",
		describeBackup)
}

func newBackupListCommand(g *globals) *cobra.Command {
	return newListCommand(g, "List backups known to Temporal and committed in the location, newest first",
		starter.Service.ListBackups, func(w io.Writer, list *starter.BackupList, location string) {
			if len(list.Items) == 0 {
				fmt.Fprintf(w, "No backups in Temporal or in %s.\n", location)
				return
			}
			backupTable(w, list.Items)
			printUnreadable(w, list.Unreadable)
		})
}

func backupTable(w io.Writer, items []*starter.BackupView) {
	row(w, "NAME", "PHASE", "ITEMS", "ERRORS", "WARNINGS", "STARTED", "DURATION", "EXPIRES")
	for _, v := range items {
		items, errs, warns, expires := "-", "-", "-", "-"
		if s := v.Status; s != nil {
			items = fmt.Sprint(s.ItemsDone)
			errs, warns = fmt.Sprint(s.Errors), fmt.Sprint(s.Warnings)
			expires = until(s.Expiration)
		}
		row(w, v.Name, string(v.Phase), items, errs, warns, age(v.StartTime), duration(v.StartTime, v.EndTime), expires)
	}
}

// describeBackup is the full terminal view of one backup.
func describeBackup(w io.Writer, v *starter.BackupView) {
	row(w, "Name:", v.Name)
	row(w, "Phase:", string(v.Phase))
	if s := v.Status; s != nil && s.FailureReason != "" {
		row(w, "Reason:", s.FailureReason)
	}
	if s := v.Status; s != nil {
		waitingRows(w, s.Waiting)
	}
	retryingRows(w, v.Retrying)
	describeTimes(w, v.StartTime, v.EndTime, v.Location, v.UIURL)
	describeActingAs(w, v.Source, v.ActingAs)
	if sp := v.Spec; sp != nil {
		row(w, "Namespaces:", fmt.Sprintf("include %v, exclude %v", sp.IncludedNamespaces, sp.ExcludedNamespaces))
		cluster := string(sp.ClusterResources)
		if sp.ClusterResources == v1alpha1.ClusterResourcesAuto && !sp.TakesWorkloadDependencies() {
			cluster += " (without the workloads' related cluster resources)"
		}
		row(w, "Resources:", fmt.Sprintf("include %v, exclude %v, cluster-scoped %s", sp.IncludedResources, sp.ExcludedResources, cluster))
		if sp.LabelSelector != "" || len(sp.OrLabelSelectors) > 0 {
			row(w, "Selectors:", fmt.Sprintf("%q or %q", sp.LabelSelector, sp.OrLabelSelectors))
		}
	}
	s := v.Status
	if s == nil {
		row(w, "Status:", "not available (no worker answered the status query)")
		return
	}
	row(w, "Expires:", timestamp(s.Expiration))
	if v.ImmutableUntil != nil {
		row(w, "Immutable:", "until "+timestamp(v.ImmutableUntil)+" (object lock: it cannot be deleted before)")
	}
	row(w, "Kubernetes:", s.KubernetesVersion)
	row(w, "Items:", fmt.Sprintf("%d in %d/%d resource types across %d namespaces", s.ItemsDone, s.ResourceTypesDone, s.ResourceTypesTotal, s.Namespaces))
	row(w, "Errors:", fmt.Sprint(s.Errors))
	row(w, "Warnings:", fmt.Sprint(s.Warnings))
	if s.TarballBytes > 0 {
		row(w, "Tarball:", fmt.Sprintf("%d bytes", s.TarballBytes))
	}
	if c := s.ExtensionOperations; c != nil {
		row(w, "Extension operations:", fmt.Sprintf("%d: %d completed, %d failed, %d canceled (operations.json lists them)",
			c.Total, c.Completed, c.Failed, c.Canceled))
	}
	if len(s.Resources) > 0 {
		fmt.Fprintln(w)
		row(w, "RESOURCE", "ITEMS", "STATE")
		names := make([]string, 0, len(s.Resources))
		for n := range s.Resources {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p := s.Resources[n]
			state := "collecting"
			switch {
			case p.Error != "":
				state = "error: " + p.Error
			case p.Done:
				state = "done"
			}
			row(w, n, fmt.Sprint(p.Items), state)
		}
	}
	hooksTable(w, s.Hooks)
	operationsTable(w, s.Operations)
	skippedTable(w, s.Skipped)
}

// operationsTable lists a backup's async operations: one CSI snapshot per
// claim or one file-system copy per pod volume, where it stands and, once
// done, its handle and size or what was copied.
func operationsTable(w io.Writer, ops []v1alpha1.Operation) {
	if len(ops) == 0 {
		return
	}
	fmt.Fprintln(w)
	row(w, "OPERATION", "PHASE", "STARTED", "UPDATED", "SNAPSHOT", "SIZE", "DETAIL")
	for _, op := range ops {
		snapshot, size, detail := "-", "-", op.Progress
		if sn := op.Snapshot; sn != nil {
			snapshot = sn.Name + " (" + sn.Handle + ")"
			size = fmt.Sprint(sn.RestoreBytes)
			if len(sn.Pruned) > 0 {
				detail = fmt.Sprintf("pruned %v", sn.Pruned)
			}
			if sn.Deleted {
				snapshot = sn.Name + " (deleted after the data was moved)"
			}
		}
		if pv := op.Volume.PodVolume; pv != nil {
			snapshot = fmt.Sprintf("file-system copy of %s volume %s on %s", pv.Source, pv.Volume, pv.Node)
			if pv.Consistency != "" {
				snapshot += ", " + pv.Consistency
			}
		}
		if up := op.Upload; up != nil {
			detail = fmt.Sprintf("kopia %s: %s in %d files, %s uploaded in %s", up.SnapshotID,
				humanize.IBytes(uint64(up.Bytes)), up.Files, humanize.IBytes(uint64(up.UploadedBytes)), took(up.Duration))
			if up.Attempts > 1 {
				detail += fmt.Sprintf(" (%d data movers)", up.Attempts)
			}
		}
		if op.Error != "" {
			detail = op.Error
		}
		if detail == "" {
			detail = "-"
		}
		row(w, op.ID, string(op.Phase), age(op.Started), age(op.Updated), snapshot, size, detail)
	}
}

// waitingRows names the extensions a run waits on.
func waitingRows(w io.Writer, waiting []v1alpha1.ExtensionWait) {
	for _, wait := range waiting {
		what := "extension " + wait.Extension
		switch {
		case wait.Operation != "":
			what += ", operation " + wait.Operation
		case wait.Ready != "":
			what += ", for " + wait.Ready + " to be ready"
		}
		row(w, "Waiting on:", fmt.Sprintf("%s (task queue %s) for %s", what, wait.TaskQueue, age(&wait.Since.Time)))
	}
}
