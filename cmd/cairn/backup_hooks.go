package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// hooksTable lists what a backup's hooks did: where each ran, its exit
// code and time, and the end of its output when it failed.
func hooksTable(w io.Writer, hooks []v1alpha1.HookResult) {
	if len(hooks) == 0 {
		return
	}
	fmt.Fprintln(w)
	row(w, "HOOK", "POD", "CONTAINER", "COMMAND", "EXIT", "TOOK", "RESULT")
	for _, h := range hooks {
		exit := "-"
		if h.ExitCode >= 0 {
			exit = fmt.Sprint(h.ExitCode)
		}
		result := "ok"
		if h.Failed() {
			result = fmt.Sprintf("failed (onError %s): %s", h.OnError, h.Error)
			if s := lastLine(h.Stderr); s != "" {
				result += ": " + s
			}
		}
		if h.Attempt > 1 {
			result += fmt.Sprintf(" (attempt %d)", h.Attempt)
		}
		row(w, string(h.Phase), h.Pod, h.Container, orDash(strings.Join(h.Command, " ")), exit, took(h.Duration), result)
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
