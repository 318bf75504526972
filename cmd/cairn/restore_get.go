package main

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

func newRestoreGetCommand(g *globals) *cobra.Command {
	return newShowCommand(g, restores, "get NAME", "Show one restore as a table row (or its full record with -o json|yaml)",
		func(w io.Writer, v *starter.RestoreView) { restoreTable(w, []*starter.RestoreView{v}) })
}

func newRestoreDescribeCommand(g *globals) *cobra.Command {
	return newShowCommand(g, restores, "describe NAME", "Show a restore in detail: spec, counts per resource type in restore order, skipped types",
		describeRestore)
}

func newRestoreListCommand(g *globals) *cobra.Command {
	return newListCommand(g, "List restores known to Temporal and recorded in the location, newest first",
		starter.Service.ListRestores, func(w io.Writer, list *starter.RestoreList, location string) {
			if len(list.Items) == 0 {
				fmt.Fprintf(w, "No restores in Temporal or in %s.\n", location)
				return
			}
			restoreTable(w, list.Items)
			printUnreadable(w, list.Unreadable)
		})
}

func restoreTable(w io.Writer, items []*starter.RestoreView) {
	row(w, "NAME", "BACKUP", "PHASE", "RESTORED", "SKIPPED", "FAILED", "WARNINGS", "STARTED", "DURATION")
	for _, v := range items {
		restored, skipped, failed, warns := "-", "-", "-", "-"
		if s := v.Status; s != nil {
			restored, skipped = fmt.Sprint(s.ItemsRestored), fmt.Sprint(s.ItemsSkipped)
			failed, warns = fmt.Sprint(s.ItemsFailed), fmt.Sprint(s.Warnings)
		}
		row(w, v.Name, backupOf(v), string(v.Phase), restored, skipped, failed, warns,
			age(v.StartTime), duration(v.StartTime, v.EndTime))
	}
}

// backupOf names the backup a restore reads, from its spec or its status.
func backupOf(v *starter.RestoreView) string {
	switch {
	case v.Spec != nil && v.Spec.BackupName != "":
		return v.Spec.BackupName
	case v.Status != nil && v.Status.Backup != "":
		return v.Status.Backup
	}
	return "-"
}

// describeRestore is the full terminal view of one restore.
func describeRestore(w io.Writer, v *starter.RestoreView) {
	row(w, "Name:", v.Name)
	row(w, "Backup:", backupOf(v))
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
		describeRestoreSpec(w, sp)
	}
	s := v.Status
	if s == nil {
		row(w, "Status:", "not available (no worker answered the status query)")
		return
	}
	if s.BackupFormat != "" {
		row(w, "Backup format:", s.BackupFormat)
	}
	row(w, "Items:", fmt.Sprintf("%d restored, %d skipped, %d failed of %d, in %d/%d resource types",
		s.ItemsRestored, s.ItemsSkipped, s.ItemsFailed, s.ItemsTotal, s.ResourceTypesDone, s.ResourceTypesTotal))
	row(w, "Warnings:", fmt.Sprint(s.Warnings))
	if c := s.ExtensionOperations; c != nil {
		row(w, "Extension operations:", fmt.Sprintf("%d: %d completed, %d failed, %d canceled (operations.json lists them)",
			c.Total, c.Completed, c.Failed, c.Canceled))
	}
	if len(s.Resources) > 0 {
		fmt.Fprintln(w)
		row(w, "RESOURCE", "TOTAL", "RESTORED", "SKIPPED", "FAILED", "STATE")
		for _, n := range restoreOrder(s) {
			o := s.Resources[n]
			state := "pending"
			switch {
			case o.Done:
				state = "done"
			case n == s.Current:
				state = "restoring"
			case o.Total == 0:
				state = "nothing to apply" // every item left out by rule
			case v.Phase.Done():
				state = "not applied"
			}
			row(w, n, fmt.Sprint(o.Total), fmt.Sprint(o.Restored), fmt.Sprint(o.Skipped), fmt.Sprint(o.Failed), state)
		}
	}
	volumeRestoresTable(w, s.Volumes)
	podVolumeRestoresTable(w, s.PodVolumes)
	hooksTable(w, s.Hooks)
	skippedTable(w, s.Skipped)
}

// volumeRestoresTable lists the claims whose data a restore wrote back
// from the repository: where each stands and what was written.
func volumeRestoresTable(w io.Writer, vols []v1alpha1.VolumeRestoreStatus) {
	if len(vols) == 0 {
		return
	}
	fmt.Fprintln(w)
	row(w, "VOLUME", "PHASE", "STARTED", "UPDATED", "KOPIA SNAPSHOT", "VOLUME NAME", "DETAIL")
	for _, v := range vols {
		row(w, v.Key(), string(v.Phase), age(v.Started), age(v.Updated), v.SnapshotID, cmp.Or(v.PersistentVolume, "-"), volumeRestoreDetail(v))
	}
}

// podVolumeRestoresTable lists the file-system copies a restore wrote
// back into restored pods, on their nodes.
func podVolumeRestoresTable(w io.Writer, vols []v1alpha1.VolumeRestoreStatus) {
	if len(vols) == 0 {
		return
	}
	fmt.Fprintln(w)
	row(w, "POD VOLUME", "PHASE", "STARTED", "UPDATED", "KOPIA SNAPSHOT", "NODE", "DETAIL")
	for _, v := range vols {
		node := "-"
		if d := v.Download; d != nil {
			node = cmp.Or(d.Node, "-")
		}
		row(w, v.Key(), string(v.Phase), age(v.Started), age(v.Updated), v.SnapshotID, node, volumeRestoreDetail(v))
	}
}

// volumeRestoreDetail is what a volume's restore wrote, where it stands
// until then, or why it failed.
func volumeRestoreDetail(v v1alpha1.VolumeRestoreStatus) string {
	if v.Error != "" {
		return v.Error
	}
	detail := v.Progress
	if d := v.Download; d != nil {
		detail = fmt.Sprintf("%s in %d files written in %s", humanize.IBytes(uint64(d.Bytes+d.SkippedBytes)), d.Files, took(d.Duration))
		if d.Attempts > 1 {
			detail += fmt.Sprintf(" (%d data movers)", d.Attempts)
		}
		if v.Bound {
			detail += ", bound"
		}
	}
	if v.SourceNamespace != "" {
		detail += " (from namespace " + v.SourceNamespace + ")"
	}
	return cmp.Or(detail, "-")
}

// describeRestoreSpec summarizes what a restore asked for.
func describeRestoreSpec(w io.Writer, sp *v1alpha1.RestoreSpec) {
	row(w, "Namespaces:", fmt.Sprintf("include %v, exclude %v", sp.IncludedNamespaces, sp.ExcludedNamespaces))
	if len(sp.NamespaceMapping) > 0 {
		from := make([]string, 0, len(sp.NamespaceMapping))
		for f := range sp.NamespaceMapping {
			from = append(from, f)
		}
		sort.Strings(from)
		pairs := make([]string, len(from))
		for i, f := range from {
			pairs[i] = f + " -> " + sp.NamespaceMapping[f]
		}
		row(w, "Mapping:", strings.Join(pairs, ", "))
	}
	row(w, "Resources:", fmt.Sprintf("include %v, exclude %v, cluster-scoped %s", sp.IncludedResources, sp.ExcludedResources, sp.ClusterResources))
	if sp.LabelSelector != "" || len(sp.OrLabelSelectors) > 0 {
		row(w, "Selectors:", fmt.Sprintf("%q or %q", sp.LabelSelector, sp.OrLabelSelectors))
	}
	row(w, "Existing objects:", existingPolicyText(sp.ExistingResourcePolicy))
	if rs := sp.RestoreStatus; rs != nil && len(rs.IncludedResources) > 0 {
		row(w, "Status restored:", strings.Join(rs.IncludedResources, ", "))
	}
	if sp.PreserveNodePorts {
		row(w, "NodePorts:", "preserved")
	}
	if len(sp.ResourcePriorities) > 0 {
		row(w, "Order:", strings.Join(sp.ResourcePriorities, ", ")+", then the rest alphabetically")
	}
	if sp.DataMoverPrepareTimeout != nil || sp.DataMoverTimeout != nil {
		row(w, "Data movers:", fmt.Sprintf("start within %s, finish within %s", sp.PrepareTimeout(), sp.DataTimeout()))
	}
}

// existingPolicyText says what a policy does to objects already there.
func existingPolicyText(p v1alpha1.ExistingResourcePolicy) string {
	switch p {
	case v1alpha1.ExistingResourceNone:
		return "none (identical ones count as restored, different ones are skipped)"
	case v1alpha1.ExistingResourceUpdate:
		return "update (patched to their backed-up state)"
	}
	return orDash(string(p))
}

// restoreOrder is the status's resource types in apply order, then any it
// counts but the order misses, by name.
func restoreOrder(s *v1alpha1.RestoreStatus) []string {
	seen := make(map[string]bool, len(s.Order))
	names := make([]string, 0, len(s.Resources))
	for _, n := range s.Order {
		if _, ok := s.Resources[n]; ok && !seen[n] {
			names = append(names, n)
			seen[n] = true
		}
	}
	var rest []string
	for n := range s.Resources {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}
