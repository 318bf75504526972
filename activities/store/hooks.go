package store

import (
	"fmt"
	"strings"

	"github.com/cairn-backup/cairn/workflows"
)

// hookEntries are the backup's failed hooks as results: an error each
// for those with onError Fail, a warning each for those with Continue.
func hookEntries(hooks []workflows.HookResult) (errs, warnings []workflows.ResultEntry) {
	for _, h := range hooks {
		if !h.Failed() {
			continue
		}
		ns, name, _ := strings.Cut(h.Pod, "/")
		msg := fmt.Sprintf("%s hook (%s) in container %s failed: %s", h.Phase, h.Source, h.Container, h.Error)
		if s := strings.TrimSpace(h.Stderr); s != "" {
			msg += ": " + s
		}
		e := workflows.ResultEntry{Resource: "pods", Namespace: ns, Name: name, Message: msg}
		if h.OnError == workflows.HookContinue {
			warnings = append(warnings, e)
		} else {
			errs = append(errs, e)
		}
	}
	return errs, warnings
}
