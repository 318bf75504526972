package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func newRestoreResultsCommand(g *globals) *cobra.Command {
	var out outputFlag
	var only string
	cmd := &cobra.Command{
		Use:   "results NAME",
		Short: "List what a finished restore did with every item: restored, skipped or failed, and why",
		Long: `Lists the outcome of every item of a finished restore, as recorded in
restores/<name>/results.json: its result (restored, skipped, failed), how a
restored item got there (created, unchanged, updated) and why an item was
skipped or failed. Items restored into a mapped namespace show the backed-up
namespace too. The resource types left out and the warnings follow.`,
		Example: `  cairn restore results shop-1 --only failed
  cairn restore results shop-1 -o json | jq '.items[] | select(.action == "updated")'`,
		Args: exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			switch v1alpha1.ItemResult(only) {
			case "", v1alpha1.ItemRestored, v1alpha1.ItemSkipped, v1alpha1.ItemFailed:
			default:
				return &usageError{fmt.Errorf("--only %q: use restored, skipped or failed", only)}
			}
			sc, closeClient, err := g.starterClient()
			if err != nil {
				return err
			}
			defer closeClient()
			res, err := sc.RestoreResults(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			res = onlyResult(res, v1alpha1.ItemResult(only))
			return out.print(cmd.OutOrStdout(), res, func(w io.Writer) { resultsTable(w, res, only) })
		},
	}
	cmd.Flags().StringVar(&only, "only", "", "only items with this result: restored, skipped or failed")
	out.register(cmd)
	return cmd
}

// onlyResult keeps the items with result r (all of them when r is "").
func onlyResult(res *v1alpha1.RestoreResults, r v1alpha1.ItemResult) *v1alpha1.RestoreResults {
	if r == "" {
		return res
	}
	kept := *res
	kept.Items = nil
	for _, it := range res.Items {
		if it.Result == r {
			kept.Items = append(kept.Items, it)
		}
	}
	if r != v1alpha1.ItemSkipped {
		kept.Skipped = nil
	}
	return &kept
}

func resultsTable(w io.Writer, res *v1alpha1.RestoreResults, only string) {
	if len(res.Items) == 0 {
		if only != "" {
			fmt.Fprintf(w, "No %s items.\n", only)
		} else {
			fmt.Fprintln(w, "No items.")
		}
	} else {
		row(w, "RESOURCE", "NAMESPACE", "NAME", "RESULT", "ACTION", "REASON")
		for _, it := range res.Items {
			ns := orDash(it.Namespace)
			if it.SourceNamespace != "" && it.SourceNamespace != it.Namespace {
				ns = fmt.Sprintf("%s (from %s)", ns, it.SourceNamespace)
			}
			row(w, it.Resource, ns, it.Name, string(it.Result), orDash(string(it.Action)), orDash(it.Reason))
		}
	}
	skippedTable(w, res.Skipped)
	if len(res.Warnings) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "WARNINGS")
		for _, warn := range res.Warnings {
			fmt.Fprintln(w, warn)
		}
	}
}
