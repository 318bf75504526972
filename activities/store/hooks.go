package store

import (
	"fmt"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// hookEntries are the backup's failed hooks as results: an error each
// for those with onError Fail, a warning each for those with Continue.
func hookEntries(hooks []v1alpha1.HookResult) (errs, warnings []v1alpha1.ResultEntry) {
	for _, h := range hooks {
		if !h.Failed() {
			continue
		}
		ns, name, _ := strings.Cut(h.Pod, "/")
		msg := fmt.Sprintf("%s hook (%s) in container %s failed: %s", h.Phase, h.Source, h.Container, h.Error)
		if s := strings.TrimSpace(h.Stderr); s != "" {
			msg += ": " + s
		}
		e := v1alpha1.ResultEntry{Resource: "pods", Namespace: ns, Name: name, Message: msg}
		if h.OnError == v1alpha1.HookContinue {
			warnings = append(warnings, e)
		} else {
			errs = append(errs, e)
		}
	}
	return errs, warnings
}
