package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// describeRestoreDryRun is the terminal view of a restore's dry run: per
// type what would happen, then the items skipped or failed and why.
func describeRestoreDryRun(w io.Writer, r *v1alpha1.RestoreDryRun) {
	row(w, "Dry run of restore:", r.Name+" from backup "+r.Backup+" (nothing was written; run "+r.WorkflowID+")")
	row(w, "Namespace mapping:", orDash(mapping(r.NamespaceMapping)))
	row(w, "Storage class mapping:", orDash(mapping(r.StorageClassMapping)))
	if len(r.Volumes) > 0 {
		row(w, "Volume data:", fmt.Sprintf("%d claims from the repository (not tried): %s", len(r.Volumes), strings.Join(r.Volumes, ", ")))
	}
	if r.ExtensionOperations > 0 {
		row(w, "Extension operations:", fmt.Sprintf("%d would start (none ran)", r.ExtensionOperations))
	}
	fmt.Fprintln(w)
	row(w, "RESOURCE", "CREATE", "UNCHANGED", "UPDATE", "SKIP", "FAIL")
	types := slices.Clone(r.Order)
	for _, gr := range slices.Sorted(maps.Keys(r.Resources)) {
		if !slices.Contains(types, gr) {
			types = append(types, gr) // only skipped by rule, never applied
		}
	}
	for _, gr := range types {
		o := r.Resources[gr]
		row(w, gr, fmt.Sprint(o.Created), fmt.Sprint(o.Unchanged), fmt.Sprint(o.Updated), fmt.Sprint(o.Skipped), fmt.Sprint(o.Failed))
	}
	var notes []v1alpha1.ItemOutcome
	for _, gr := range slices.Sorted(maps.Keys(r.Resources)) {
		for _, it := range r.Resources[gr].Items {
			if it.Result != v1alpha1.ItemRestored || it.Reason != "" {
				notes = append(notes, it)
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		row(w, "OBJECT", "WOULD BE", "WHY")
		for _, it := range notes {
			what := string(it.Result)
			if it.Result == v1alpha1.ItemRestored {
				what = string(it.Action)
			}
			row(w, objectName(it), what, it.Reason)
		}
	}
	if len(r.Modifiers) > 0 {
		fmt.Fprintln(w)
		row(w, "MODIFIER RULE", "OBJECTS", "FOR EXAMPLE")
		for _, m := range r.Modifiers {
			row(w, m.Rule, fmt.Sprint(m.Objects), m.Sample)
		}
	}
	skippedTable(w, r.Skipped)
}

func mapping(m map[string]string) string {
	pairs := make([]string, 0, len(m))
	for _, from := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, from+":"+m[from])
	}
	return strings.Join(pairs, ",")
}

func objectName(it v1alpha1.ItemOutcome) string {
	if it.Namespace == "" {
		return it.Resource + " " + it.Name
	}
	return it.Resource + " " + it.Namespace + "/" + it.Name
}
