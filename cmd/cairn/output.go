package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/cairn-backup/cairn/starter"
)

// outputFlag is -o table|json|yaml.
type outputFlag struct{ format string }

func (o *outputFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", "table", "output format: table, json or yaml")
}

func (o *outputFlag) validate() error {
	switch o.format {
	case "table", "json", "yaml":
		return nil
	}
	return &usageError{fmt.Errorf("--output %q: use table, json or yaml", o.format)}
}

// print writes v as JSON or YAML, or calls table for the terminal view.
func (o *outputFlag) print(w io.Writer, v any, table func(io.Writer)) error {
	switch o.format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

func row(w io.Writer, cols ...string) { fmt.Fprintln(w, strings.Join(cols, "\t")) }

// orDash prints an empty cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age prints how long ago t was, the way kubectl does.
func age(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return shortDuration(time.Since(*t))
}

// shortDuration prints d the way kubectl prints ages: 45s, 12m, 5h, 3d.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// duration prints how long a run took, or has run so far.
func duration(start, end *time.Time) string {
	if start == nil {
		return "-"
	}
	e := time.Now()
	if end != nil {
		e = *end
	}
	return e.Sub(*start).Round(time.Second).String()
}

func timestamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

// until prints how long until t ("expired" once past).
func until(t *time.Time) string {
	if t == nil {
		return "-"
	}
	d := time.Until(*t)
	if d <= 0 {
		return "expired"
	}
	return d.Round(time.Hour).String()
}

// printCreated tells what a create did for a run of kind ("backup" or
// "restore") and how to follow it.
func printCreated(w io.Writer, kind string, res *starter.CreateResult) {
	title := strings.ToUpper(kind[:1]) + kind[1:]
	if res.Created {
		fmt.Fprintf(w, "%s %q started.\n", title, res.Name)
	} else {
		fmt.Fprintf(w, "%s %q already exists with the same spec; nothing new started.\n", title, res.Name)
	}
	if res.UIURL != "" {
		fmt.Fprintf(w, "  Temporal UI: %s\n", res.UIURL)
	}
	fmt.Fprintf(w, "  Follow it:   cairn %s describe %s\n", kind, res.Name)
}

// took reads a data movement's duration: to the second, or to the
// millisecond under one.
func took(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
