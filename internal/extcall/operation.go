package extcall

import (
	"encoding/json"

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
