package starter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/workflows"
)

// DryRunBackup finds what the backup req asks for would take, without
// taking it: it validates req as CreateBackup does, runs a short dry-run
// workflow (visible in the Temporal UI, leaving nothing in the location
// or the cluster) and waits for its report.
func (c *Client) DryRunBackup(ctx context.Context, req CreateBackupRequest) (*workflows.BackupDryRun, error) {
	if req.Schedule != "" {
		return nil, &InvalidError{Problems: []string{"schedule is set by cairn on the backups a schedule starts; leave it out"}}
	}
	req.Options.ActingAs = ActingAs(ctx)
	spec, err := c.prepareSpec(ctx, req.BackupSpec, req.Options.Problems())
	if err != nil {
		return nil, err
	}
	id := workflows.BackupDryRunWorkflowID(spec.Name, nonce())
	opts := client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: workflows.TaskQueue,
		Memo:      actingAsMemo(map[string]any{workflows.MemoLocation: spec.StorageLocation}, req.Options.ActingAs),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SearchAttrKind.ValueSet(workflows.KindBackupDryRun),
			workflows.SearchAttrName.ValueSet(spec.Name),
			workflows.SearchAttrPhase.ValueSet(string(workflows.PhaseNew)),
			workflows.SearchAttrActingAs.ValueSet(req.Options.ActingAs.UsernameOrWorker()),
		),
	}
	run, err := c.temporal.ExecuteWorkflow(ctx, opts, workflows.BackupDryRunWorkflowName,
		workflows.BackupRequest{Spec: spec, Options: req.Options})
	if err != nil {
		return nil, fmt.Errorf("start dry run of backup %s: %w", spec.Name, err)
	}
	var out workflows.BackupDryRun
	if err := run.Get(ctx, &out); err != nil {
		return nil, dryRunFailure(spec.Name, err)
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
// on: refused for the caller, or invalid for the cluster.
func dryRunFailure(name string, err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case workflows.ErrTypeForbidden:
			return &ForbiddenError{Message: appErr.Message()}
		case workflows.ErrTypeInvalidSpec:
			return &InvalidError{Problems: []string{appErr.Message()}}
		case workflows.ErrTypeBackupNotFound:
			return fmt.Errorf("%s: %w", appErr.Message(), ErrNotFound)
		case workflows.ErrTypeBackupNotReady:
			return &ConflictError{Message: appErr.Message()}
		}
		return fmt.Errorf("dry run of %s failed: %s", name, appErr.Message())
	}
	return fmt.Errorf("dry run of %s: %w", name, err)
}
