package webhook

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// scopeProblems lists what a resource created outside cairn's namespace
// asks beyond its own namespace.
func scopeProblems(kind string, raw []byte) ([]string, error) {
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
		var sc v1alpha1.Schedule
		if err := json.Unmarshal(raw, &sc); err != nil {
			return nil, fmt.Errorf("decode Schedule: %w", err)
		}
		return sc.NamespaceScopeProblems(), nil
	}
	return nil, nil
}

func joinProblems(problems []string) string {
	return strings.Join(problems, "; ")
}
