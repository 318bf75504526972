package extcall

import (
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// OperationRecord is an operation an extension's answer started, as the
// collect step records it in the backup's work area for the operations
// step to run.
type OperationRecord struct {
	Extension     string                `json:"extension"`
	ID            string                `json:"id"`
	Resource      extension.Resource    `json:"resource"`
	Item          extension.ObjectRef   `json:"item"`
	ItemsToUpdate []extension.ObjectRef `json:"itemsToUpdate,omitempty"`
	Data          json.RawMessage       `json:"data,omitempty"`
}

// BadOperation says what is wrong with an answer's operation, besides
// its items to update; "" when nothing is.
func BadOperation(op *extension.OperationStart) string {
	switch {
	case op.ID == "":
		return "operation without an id"
	case len(op.ID) > extension.MaxOperationIDBytes:
		return fmt.Sprintf("operation id of %d bytes, more than %d", len(op.ID), extension.MaxOperationIDBytes)
	case !utf8.ValidString(op.ID) || containsControl(op.ID):
		return fmt.Sprintf("operation id %q is not printable text", op.ID)
	case len(op.Data) > extension.MaxOperationDataBytes:
		return fmt.Sprintf("operation data of %d bytes, more than %d", len(op.Data), extension.MaxOperationDataBytes)
	case len(op.ItemsToUpdate) > extension.MaxAdditionalItems:
		return fmt.Sprintf("operation with %d items to update, more than %d", len(op.ItemsToUpdate), extension.MaxAdditionalItems)
	}
	return ""
}

func containsControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}
