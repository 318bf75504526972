package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// newLogsCommand prints the log a run of kind k stored in its location.
func newLogsCommand[V any](g *globals, k runKind[V]) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: fmt.Sprintf("Print a %s's log (every line carries the %s's name)", k.name, k.name),
		Long: fmt.Sprintf(`Prints the log a %s stored in its location: logs.jsonl.gz once it ended,
or what its finished activity attempts have stored so far while it runs.
-o text (default) is for reading; -o json prints the stored JSON lines.`, k.name),
		Args: exactName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return &usageError{fmt.Errorf("--output %q: use text or json", format)}
			}
			sc, closeClient, err := g.starterClient()
			if err != nil {
				return err
			}
			defer closeClient()
			var buf bytes.Buffer
			if err := k.logs(sc, cmd.Context(), args[0], &buf); err != nil {
				return err
			}
			if format == "json" {
				_, err := buf.WriteTo(cmd.OutOrStdout())
				return err
			}
			return humanLog(&buf, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "text", "text or json")
	return cmd
}

// humanLog turns JSON log lines into "time LEVEL message key=value ...".
func humanLog(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			fmt.Fprintln(w, sc.Text())
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%v %-5s %v", line["ts"], strings.ToUpper(fmt.Sprint(line["level"])), line["msg"])
		keys := make([]string, 0, len(line))
		for k := range line {
			switch k {
			case "ts", "level", "msg", "caller", "logger":
			default:
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%v", k, line[k])
		}
		fmt.Fprintln(w, b.String())
	}
	return sc.Err()
}
