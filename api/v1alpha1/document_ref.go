package v1alpha1

import "fmt"

// MaxInlineDocument bounds a document given inline in a spec: it travels
// in the run's input and is stored with the run.
const MaxInlineDocument = 256 << 10

// DocumentRef gives a Velero-format document (resource modifiers, volume
// policies): the name of a ConfigMap in the worker's namespace whose one
// data key holds it, as Velero takes them, or the document itself.
//
// +kubebuilder:object:generate=true
type DocumentRef struct {
	ConfigMap string `json:"configMap,omitempty"`
	Inline    string `json:"inline,omitempty"`
}

// problems checks the reference, and an inline document with parse.
func (r *DocumentRef) problems(field string, parse func([]byte) error) []string {
	switch {
	case r == nil:
		return nil
	case (r.ConfigMap == "") == (r.Inline == ""):
		return []string{field + ": give configMap or inline, one of them"}
	case len(r.Inline) > MaxInlineDocument:
		return []string{fmt.Sprintf("%s.inline is %d bytes, more than %d: put it in a ConfigMap", field, len(r.Inline), MaxInlineDocument)}
	case r.Inline != "":
		if err := parse([]byte(r.Inline)); err != nil {
			return []string{fmt.Sprintf("%s: %v", field, err)}
		}
	}
	return nil
}
