package extcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// Operator runs the operations extensions start: each as the
// ExtensionOperation workflow under its ID, started once however often a
// retried step asks.
type Operator interface {
	// Run starts the operation's workflow, or finds the one an earlier
	// attempt started, and waits for its result.
	Run(ctx context.Context, id string, in v1alpha1.ExtensionOperationInput) (json.RawMessage, error)
	// Cancel asks a running operation to stop; one that has ended or
	// never started is left as it is.
	Cancel(ctx context.Context, id string) error
}

// TemporalOperator runs operations through Temporal.
type TemporalOperator struct{ Client client.Client }

// Run starts or finds the operation's workflow and waits for it. What it
// returns is the operation's result, or an error that says how it ended
// (an application error, canceled, terminated, timed out), or Temporal
// out of reach (ctx ended, or the step's retry mends it).
func (t TemporalOperator) Run(ctx context.Context, id string, in v1alpha1.ExtensionOperationInput) (json.RawMessage, error) {
	var result json.RawMessage
	if err := startOrFind(ctx, t.Client, id, v1alpha1.KindExtensionOperation, in.RunName(), v1alpha1.ExtensionOperationWorkflowName, in, &result); err != nil {
		return nil, err
	}
	return result, nil
}

// Cancel requests the cancellation of the operation's workflow.
func (t TemporalOperator) Cancel(ctx context.Context, id string) error {
	err := t.Client.CancelWorkflow(ctx, id, "")
	var notFound *serviceerror.NotFound
	if err == nil || errors.As(err, &notFound) {
		return nil
	}
	return fmt.Errorf("cancel %s: %w", id, err)
}
