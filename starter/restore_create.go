package starter

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// CreateRestoreRequest is the body of POST /v1/restores: the spec's fields
// at top level, plus optional run options.
type CreateRestoreRequest struct {
	v1alpha1.RestoreSpec
	Options v1alpha1.RestoreOptions `json:"options"`
	// DryRun asks what the restore would do: the API answers a
	// v1alpha1.RestoreDryRun and writes nothing.
	DryRun bool `json:"dryRun,omitempty"`
}

// CreateRestore validates req, checks that its backup can be restored, and
// starts the restore. The same name with the same spec returns the
// existing restore; with another spec it is a ConflictError. An unknown
// backup is ErrNotFound; one still running or failed is a ConflictError.
func (c *Client) CreateRestore(ctx context.Context, req CreateRestoreRequest) (*CreateResult, error) {
	if req.DryRun {
		return nil, &InvalidError{Problems: []string{"dryRun: a dry run is DryRunRestore's, which restores nothing"}}
	}
	spec, err := c.prepareRestore(ctx, &req)
	if err != nil {
		return nil, err
	}
	if existing, err := c.existingRestore(ctx, spec); existing != nil || err != nil {
		return existing, err
	}
	if err := c.checkRestorable(ctx, spec); err != nil {
		return nil, err
	}

	id := v1alpha1.RestoreWorkflowID(spec.Name)
	opts := client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                v1alpha1.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo: actingAsMemo(map[string]any{v1alpha1.MemoSpecHash: spec.Hash(), v1alpha1.MemoLocation: spec.StorageLocation,
			v1alpha1.MemoBackup: spec.BackupName}, req.Options.ActingAs),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindRestore),
			v1alpha1.SearchAttrName.ValueSet(spec.Name),
			v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseNew)),
			v1alpha1.SearchAttrActingAs.ValueSet(req.Options.ActingAs.UsernameOrWorker()),
		),
	}
	run, err := c.temporal.ExecuteWorkflow(ctx, opts, v1alpha1.RestoreWorkflowName,
		v1alpha1.RestoreRequest{Spec: spec, Options: req.Options})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return c.existingRestore(ctx, spec) // lost a race with the same name
	}
	if err != nil {
		return nil, fmt.Errorf("start restore %s: %w", spec.Name, err)
	}
	return &CreateResult{Name: spec.Name, WorkflowID: id, RunID: run.GetRunID(), Created: true, UIURL: c.RunURL(id, run.GetRunID())}, nil
}

// prepareRestore resolves a restore from a schedule, sets whom it acts
// as and returns its spec with defaults, validated.
func (c *Client) prepareRestore(ctx context.Context, req *CreateRestoreRequest) (v1alpha1.RestoreSpec, error) {
	if req.ScheduleName != "" {
		if err := c.resolveSchedule(ctx, &req.RestoreSpec); err != nil {
			return v1alpha1.RestoreSpec{}, err
		}
	}
	// Whom the restore reads and writes the cluster as comes from the
	// request's authenticated caller, never from its body.
	req.Options.ActingAs = ActingAs(ctx)
	spec := req.RestoreSpec.WithDefaults(c.opts.DefaultLocation)
	problems := append(req.Options.Problems(), restoreScopeProblems(NamespaceOf(ctx), *req)...)
	return spec, c.validateRestore(&spec, problems)
}

// validateRestore checks the spec and normalizes its location.
func (c *Client) validateRestore(spec *v1alpha1.RestoreSpec, optionProblems []string) error {
	problems := optionProblems
	if err := spec.Validate(); err != nil {
		var invalid *v1alpha1.InvalidSpecError
		if !errors.As(err, &invalid) {
			return err
		}
		problems = append(problems, invalid.Problems...)
	}
	normalized, err := c.resolveLocation(spec.StorageLocation, false)
	if err != nil {
		problems = append(problems, err.Error())
	} else {
		spec.StorageLocation = normalized
	}
	if len(problems) > 0 {
		return &InvalidError{Problems: problems}
	}
	return nil
}

// checkRestorable refuses a backup that does not exist, is still running
// or did not complete, before anything starts. The committed metadata
// decides: a backup whose run is still cleaning up is already restorable.
func (c *Client) checkRestorable(ctx context.Context, spec v1alpha1.RestoreSpec) error {
	meta, err := c.readMetadata(ctx, spec.StorageLocation, spec.BackupName)
	switch {
	case errors.Is(err, ErrNotFound):
		running, derr := describeRun[v1alpha1.BackupSpec, v1alpha1.BackupStatus](ctx, c, v1alpha1.BackupWorkflowID(spec.BackupName))
		if derr != nil {
			return derr
		}
		switch {
		case running != nil && running.EndTime == nil:
			return &ConflictError{Message: fmt.Sprintf("backup %q is still in progress (phase %s); restore it once it has completed",
				spec.BackupName, running.Phase)}
		case running != nil:
			return &ConflictError{Message: fmt.Sprintf("backup %q ended %s without committing anything to restore", spec.BackupName, running.Phase)}
		}
		return fmt.Errorf("backup %q is not in %s (list them with `cairn backup list`): %w", spec.BackupName, spec.StorageLocation, ErrNotFound)
	case err != nil:
		return err
	}
	if p := meta.Status.Phase; p != v1alpha1.PhaseCompleted && p != v1alpha1.PhasePartiallyFailed {
		return &ConflictError{Message: fmt.Sprintf("backup %q is %s; only a Completed or PartiallyFailed backup can be restored", spec.BackupName, p)}
	}
	return nil
}

// existingRestore answers a create for a name already used, in Temporal or
// in the location: the same request again, or a conflict.
func (c *Client) existingRestore(ctx context.Context, spec v1alpha1.RestoreSpec) (*CreateResult, error) {
	id := v1alpha1.RestoreWorkflowID(spec.Name)
	desc, err := c.temporal.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		meta, err := c.readRestoreMetadata(ctx, spec.StorageLocation, spec.Name)
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if meta.Spec.Hash() != spec.Hash() {
			return nil, &ConflictError{Message: fmt.Sprintf("restore %q already exists in %s with a different spec; choose another name", spec.Name, spec.StorageLocation)}
		}
		return &CreateResult{Name: spec.Name, WorkflowID: meta.WorkflowID, RunID: meta.RunID, UIURL: c.RunURL(meta.WorkflowID, meta.RunID)}, nil
	case err != nil:
		return nil, fmt.Errorf("describe restore %s: %w", spec.Name, err)
	}
	return c.sameSpecRun(desc.GetWorkflowExecutionInfo(), "restore", spec.Name, spec.Hash())
}
