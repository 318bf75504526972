package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// describeDryRun is the terminal view of a backup's dry run: what the
// backup would take, type by type, and what it would do to each volume.
func describeDryRun(w io.Writer, r *v1alpha1.BackupDryRun) {
	row(w, "Dry run of backup:", r.Name+" (nothing was taken; run "+r.WorkflowID+")")
	total := 0
	for _, n := range r.Resources {
		total += n
	}
	row(w, "Items:", fmt.Sprintf("%d in %d resource types across %d namespaces", total, len(r.Resources), r.Namespaces))
	row(w, "Errors:", fmt.Sprint(r.Errors))
	row(w, "Warnings:", fmt.Sprint(r.WarningsTotal))
	if r.ExtensionOperations > 0 {
		row(w, "Extension operations:", fmt.Sprintf("%d would start (none ran)", r.ExtensionOperations))
	}
	if len(r.Resources) > 0 {
		fmt.Fprintln(w)
		row(w, "RESOURCE", "ITEMS", "RELATED OBJECTS")
		names := make([]string, 0, len(r.Resources))
		for n := range r.Resources {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			row(w, n, fmt.Sprint(r.Resources[n]), orDash(strings.Join(r.Related[n], ", ")))
		}
	}
	if len(r.Volumes) > 0 {
		fmt.Fprintln(w)
		row(w, "VOLUME", "ACTION", "DRIVER", "SNAPSHOT CLASS")
		for _, v := range r.Volumes {
			row(w, v.Key(), v.Action, v.Driver, v.SnapshotClass)
		}
	}
	if len(r.Hooks) > 0 {
		fmt.Fprintln(w)
		row(w, "POD", "PRE HOOKS", "POST HOOKS", "VOLUMES")
		for _, p := range r.Hooks {
			row(w, p.Key(), hookCommands(p.Pre), hookCommands(p.Post), orDash(strings.Join(p.Claims, ", ")))
		}
		if more := r.HooksTotal - len(r.Hooks); more > 0 {
			row(w, fmt.Sprintf("... and %d more pods", more))
		}
	}
	skippedTable(w, r.Skipped)
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w)
		row(w, "WARNING")
		for _, line := range r.Warnings {
			row(w, line)
		}
		if more := r.WarningsTotal - len(r.Warnings); more > 0 {
			row(w, fmt.Sprintf("... and %d more", more))
		}
	}
}

// hookCommands prints hooks as their commands, "; " between them.
func hookCommands(hooks []v1alpha1.PodHook) string {
	cmds := make([]string, 0, len(hooks))
	for _, h := range hooks {
		cmds = append(cmds, strings.Join(h.Command, " "))
	}
	return orDash(strings.Join(cmds, "; "))
}
