package extcall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// Batch is one call's worth of items: the raw JSON of each.
type Batch [][]byte

// Split groups the items selected among sizes into batches of at most
// extension.MaxBatchBytes, in order; an item larger than that goes alone.
func Split(sizes []int, selected func(i int) bool) [][]int {
	var batches [][]int
	var cur []int
	curBytes := 0
	for i, size := range sizes {
		if !selected(i) {
			continue
		}
		if len(cur) > 0 && curBytes+size > extension.MaxBatchBytes {
			batches, cur, curBytes = append(batches, cur), nil, 0
		}
		cur = append(cur, i)
		curBytes += size
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// Request is one call: who, which activity, the request to send (its
// items among it), and where in the run the batch comes from.
type Request struct {
	Run       string
	Extension v1alpha1.Extension
	Activity  string
	// Scope names where in the run the items come from (a type, a type
	// in a restore), so IDs of different steps never meet.
	Scope   string
	Items   Batch
	Payload any
}

// Do makes the call and decodes one answer per item into []T. When the
// extension refused the call, never answered, or answered out of the
// contract, it returns no answers and why, which fails each item; err is
// for what a retry of the step may mend (Temporal unreachable).
func Do[T any](ctx context.Context, c Caller, r Request) (answers []T, failed string, err error) {
	raw, err := json.Marshal(r.Payload)
	if err != nil {
		return nil, "", err
	}
	// The ID names the batch by its content: a retried step that reads
	// the same items finds the call it made, and one that reads others
	// makes a new one.
	sum := sha256.New()
	for _, it := range r.Items {
		sum.Write(it)
	}
	key := r.Scope + "/" + hex.EncodeToString(sum.Sum(nil))[:20]
	in := v1alpha1.ExtensionCallInput{Run: r.Run, Extension: r.Extension.Name, TaskQueue: r.Extension.TaskQueue,
		Activity: r.Activity, Timeout: r.Extension.Timeout, Request: raw}
	answer, err := c.Call(ctx, v1alpha1.ExtensionCallWorkflowID(r.Run, r.Extension.Name, key), in)
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr) && appErr.Type() == v1alpha1.ErrTypeExtension:
		return nil, appErr.Message(), nil
	case err != nil:
		return nil, "", fmt.Errorf("extension %s: %w", r.Extension.Name, err)
	}
	var resp struct {
		Items []T `json:"items"`
	}
	if err := json.Unmarshal(answer, &resp); err != nil {
		return nil, fmt.Sprintf("answered out of its contract: %v", err), nil
	}
	if len(resp.Items) != len(r.Items) {
		return nil, fmt.Sprintf("answered out of its contract: want %d answers, got %d", len(r.Items), len(resp.Items)), nil
	}
	return resp.Items, "", nil
}
