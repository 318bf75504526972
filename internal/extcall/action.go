package extcall

import (
	"fmt"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/filter"
)

// Action is one registered extension that acts on a type's items, with
// its selector's filters compiled.
type Action struct {
	Ext    v1alpha1.Extension
	globs  filter.Globs
	labels filter.Labels
}

// Selects reports whether the extension is called for an item of the
// type, by its namespace ("" when cluster-scoped) and labels.
func (a Action) Selects(namespace string, labels map[string]string) bool {
	if namespace != "" && !a.globs.Match(namespace) {
		return false
	}
	return a.labels.Match(labels)
}

// Actions are the extensions whose selector for a run's kind (backup or
// restore, picked by sel) selects type gr, in registration order.
func Actions(exts []v1alpha1.Extension, gr string, sel func(v1alpha1.Extension) *v1alpha1.ExtensionSelector) ([]Action, error) {
	var out []Action
	for _, e := range exts {
		s := sel(e)
		if !s.SelectsType(gr) {
			continue
		}
		g, err := filter.NewGlobs(s.IncludedNamespaces, s.ExcludedNamespaces)
		if err != nil {
			return nil, fmt.Errorf("extension %s: %w", e.Name, err)
		}
		l, err := filter.NewLabels(s.LabelSelector, nil)
		if err != nil {
			return nil, fmt.Errorf("extension %s: %w", e.Name, err)
		}
		out = append(out, Action{Ext: e, globs: g, labels: l})
	}
	return out, nil
}

// BackupSelector, RestoreSelector and DeleteSelector pick a
// registration's selector for Actions.
func BackupSelector(e v1alpha1.Extension) *v1alpha1.ExtensionSelector  { return e.Backup }
func RestoreSelector(e v1alpha1.Extension) *v1alpha1.ExtensionSelector { return e.Restore }
func DeleteSelector(e v1alpha1.Extension) *v1alpha1.ExtensionSelector  { return e.Delete }
