package starter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// dryRun is one dry-run workflow to start and wait for.
type dryRun struct {
	id, kind, name, workflow string
	memo                     map[string]any
	actingAs                 *v1alpha1.Identity
	input                    any
}

// runDryRun starts a dry-run workflow (never a second run of a name: each
// has its own ID) and waits for its report.
func runDryRun[T any](ctx context.Context, c *Client, d dryRun) (*T, error) {
	opts := client.StartWorkflowOptions{
		ID:        d.id,
		TaskQueue: v1alpha1.TaskQueue,
		Memo:      actingAsMemo(d.memo, d.actingAs),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			v1alpha1.SearchAttrKind.ValueSet(d.kind),
			v1alpha1.SearchAttrName.ValueSet(d.name),
			v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseNew)),
			v1alpha1.SearchAttrActingAs.ValueSet(d.actingAs.UsernameOrWorker()),
		),
	}
	run, err := c.temporal.ExecuteWorkflow(ctx, opts, d.workflow, d.input)
	if err != nil {
		return nil, fmt.Errorf("start dry run of %s: %w", d.name, err)
	}
	var out T
	if err := run.Get(ctx, &out); err != nil {
		return nil, dryRunFailure(d.name, err)
	}
	return &out, nil
}

// nonce tells dry runs of one name apart.
func nonce() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// dryRunFailure turns a failed dry run into the error a caller can act
// on: refused for the caller, invalid for the cluster, no such backup.
func dryRunFailure(name string, err error) error {
	if appErr := typedCause(err); appErr != nil {
		switch appErr.Type() {
		case v1alpha1.ErrTypeForbidden:
			return &ForbiddenError{Message: appErr.Message()}
		case v1alpha1.ErrTypeInvalidSpec:
			return &InvalidError{Problems: []string{appErr.Message()}}
		case v1alpha1.ErrTypeBackupNotFound:
			return fmt.Errorf("%s: %w", appErr.Message(), ErrNotFound)
		case v1alpha1.ErrTypeBackupNotReady:
			return &ConflictError{Message: appErr.Message()}
		}
		return fmt.Errorf("dry run of %s failed: %s", name, appErr.Message())
	}
	return fmt.Errorf("dry run of %s: %w", name, err)
}

// typedCause is the innermost application error of err's chain that has
// a type of cairn's: a workflow wraps its steps' errors with context, and
// Temporal turns each wrap into an application error of its own.
func typedCause(err error) *temporal.ApplicationError {
	var found *temporal.ApplicationError
	for e := err; e != nil; e = errors.Unwrap(e) {
		// The walk is the point: errors.As would stop at the outermost.
		appErr, ok := e.(*temporal.ApplicationError) //nolint:errorlint
		if ok && appErr.Type() != "" && appErr.Type() != "wrapError" {
			found = appErr
		}
	}
	return found
}
