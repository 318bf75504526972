package main

import (
	"fmt"
	"slices"
	"strings"
)

// registration is the Extensions document that registers the adapter
// with cairn for the types its actions apply to. Namespaces and labels
// stay with the adapter, which applies each action's own.
func (a *adapter) registration(name, taskQueue string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: cairn.io/v1alpha1\nkind: Extensions\nextensions:\n- name: %s\n  taskQueue: %s\n", name, taskQueue)
	phase := func(phase string, sels []selector) {
		if len(sels) == 0 {
			return
		}
		var resources []string
		for _, s := range sels {
			resources = append(resources, s.resources()...)
		}
		slices.Sort(resources)
		resources = slices.Compact(resources)
		secrets := ""
		switch {
		case slices.Contains(resources, "*"):
			resources = []string{"*"}
			fmt.Fprintf(&b, "  # \"*\" leaves Secrets out; add allowSecrets: true to send them too, as Velero does\n")
		case slices.Contains(resources, "secrets"):
			secrets = ", allowSecrets: true"
		}
		fmt.Fprintf(&b, "  %s: {resources: [%s]%s}\n", phase, strings.Join(resources, ", "), secrets)
	}
	phase("backup", selectors(a.backups))
	phase("restore", selectors(a.restores))
	phase("delete", selectors(a.deletes))
	return b.String()
}

func selectors[T any](actions []action[T]) []selector {
	out := make([]selector, 0, len(actions))
	for _, a := range actions {
		out = append(out, a.sel)
	}
	return out
}
