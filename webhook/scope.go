package webhook

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// scopeProblems lists what a resource created outside cairn's namespace
// asks beyond its own namespace.
func scopeProblems(kind string, raw []byte, cairnNamespace string) ([]string, error) {
	switch kind {
	case "Backup":
		var b v1alpha1.Backup
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("decode Backup: %w", err)
		}
		return b.NamespaceScopeProblems(), nil
	case "Restore":
		var r v1alpha1.Restore
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decode Restore: %w", err)
		}
		return r.NamespaceScopeProblems(), nil
	case "Schedule":
		return []string{fmt.Sprintf("Schedules outside cairn's namespace (%s) are not supported yet", cairnNamespace)}, nil
	}
	return nil, nil
}

func joinProblems(problems []string) string {
	return strings.Join(problems, "; ")
}
