package starter

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// CreateBackupRequest is the body of POST /v1/backups: the spec's fields at
// top level, plus optional run options.
type CreateBackupRequest struct {
	v1alpha1.BackupSpec
	Options v1alpha1.BackupOptions `json:"options"`
	// DryRun asks what the backup would take: the API answers a
	// v1alpha1.BackupDryRun and starts no backup.
	DryRun bool `json:"dryRun,omitempty"`
}

// CreateResult says which run serves a create request.
type CreateResult struct {
	Name       string `json:"name"`
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId,omitempty"`
	// Created is false when an identical earlier request already started it.
	Created bool   `json:"created"`
	UIURL   string `json:"uiUrl,omitempty"`
}

// CreateBackup validates req and starts its backup. The same name with the
// same spec returns the existing backup; with another spec it is a
// ConflictError. Nothing starts when validation fails.
func (c *Client) CreateBackup(ctx context.Context, req CreateBackupRequest) (*CreateResult, error) {
	if req.DryRun {
		return nil, &InvalidError{Problems: []string{"dryRun: a dry run is DryRunBackup's, which starts no backup"}}
	}
	if req.Schedule != "" {
		// Retention trusts this field: only a schedule's runs carry it.
		return nil, &InvalidError{Problems: []string{"schedule is set by cairn on the backups a schedule starts; leave it out"}}
	}
	// Whom the backup reads the cluster as comes from the request's
	// authenticated caller, never from its body.
	req.Options.ActingAs = ActingAs(ctx)
	problems := append(req.Options.Problems(), namespaceScopeProblems(NamespaceOf(ctx), req.Name, req.IncludedNamespaces, req.ClusterResources)...)
	spec, err := c.prepareSpec(ctx, req.BackupSpec, problems)
	if err != nil {
		return nil, err
	}
	if existing, err := c.existingInLocation(ctx, spec); existing != nil || err != nil {
		return existing, err
	}

	id := v1alpha1.BackupWorkflowID(spec.Name)
	opts := client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                v1alpha1.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// An error, not the old run, so a repeat is told from a new start
		// and its spec compared.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo: actingAsMemo(map[string]any{v1alpha1.MemoSpecHash: spec.Hash(), v1alpha1.MemoLocation: spec.StorageLocation},
			req.Options.ActingAs),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindBackup),
			v1alpha1.SearchAttrName.ValueSet(spec.Name),
			v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseNew)),
			v1alpha1.SearchAttrActingAs.ValueSet(req.Options.ActingAs.UsernameOrWorker()),
		),
	}
	run, err := c.temporal.ExecuteWorkflow(ctx, opts, v1alpha1.BackupWorkflowName,
		v1alpha1.BackupRequest{Spec: spec, Options: req.Options})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return c.existingInTemporal(ctx, spec)
	}
	if err != nil {
		return nil, fmt.Errorf("start backup %s: %w", spec.Name, err)
	}
	return &CreateResult{Name: spec.Name, WorkflowID: id, RunID: run.GetRunID(), Created: true, UIURL: c.RunURL(id, run.GetRunID())}, nil
}

// prepareSpec fills defaults and checks everything that can be checked
// before a workflow starts: the spec itself, the resource filters against
// the cluster, and that the location can be written.
func (c *Client) prepareSpec(ctx context.Context, spec v1alpha1.BackupSpec, optionProblems []string) (v1alpha1.BackupSpec, error) {
	spec = spec.WithDefaults(c.opts.DefaultLocation)
	problems := optionProblems
	if strings.HasPrefix(spec.Name, v1alpha1.DryRunScratchPrefix) {
		problems = append(problems, fmt.Sprintf("name %q: names starting with %q are kept for dry runs", spec.Name, v1alpha1.DryRunScratchPrefix))
	}
	if err := spec.Validate(); err != nil {
		var invalid *v1alpha1.InvalidSpecError
		if !errors.As(err, &invalid) {
			return spec, err
		}
		problems = append(problems, invalid.Problems...)
	}
	normalized, err := c.resolveLocation(spec.StorageLocation, true)
	if err != nil {
		problems = append(problems, err.Error())
	} else {
		spec.StorageLocation = normalized
		problems = append(problems, ttlLockProblems(spec, c.opts.Opener.Lock(normalized))...)
	}
	if len(problems) > 0 {
		return spec, &InvalidError{Problems: problems}
	}
	if err := c.checkResourceFilters(ctx, spec); err != nil {
		return spec, err
	}
	return spec, c.checkWritable(ctx, spec.StorageLocation)
}

// checkWritable opens a normalized location and checks that it can be
// written; a failure is the request's to fix (an InvalidError).
func (c *Client) checkWritable(ctx context.Context, locationURL string) error {
	loc, err := c.opts.Opener.Open(ctx, locationURL)
	if err != nil {
		return &InvalidError{Problems: []string{err.Error()}}
	}
	defer loc.Close()
	if err := loc.CheckWritable(ctx); err != nil {
		return &InvalidError{Problems: []string{err.Error()}}
	}
	return nil
}

// existingInLocation answers a create for a name whose backup is already
// committed in the location, possibly by another cairn install.
func (c *Client) existingInLocation(ctx context.Context, spec v1alpha1.BackupSpec) (*CreateResult, error) {
	meta, err := c.readMetadata(ctx, spec.StorageLocation, spec.Name)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if meta.Format == v1alpha1.BackupFormatVelero {
		return nil, &ConflictError{Message: fmt.Sprintf("%s already holds a Velero backup called %q; choose another name", spec.StorageLocation, spec.Name)}
	}
	if meta.Spec.Hash() != spec.Hash() {
		return nil, &ConflictError{Message: fmt.Sprintf("backup %q already exists in %s with a different spec; choose another name", spec.Name, spec.StorageLocation)}
	}
	return &CreateResult{Name: spec.Name, WorkflowID: meta.WorkflowID, RunID: meta.RunID, UIURL: c.RunURL(meta.WorkflowID, meta.RunID)}, nil
}

// existingInTemporal answers a create for a name Temporal already has a
// run of: the same request again, or a conflict.
func (c *Client) existingInTemporal(ctx context.Context, spec v1alpha1.BackupSpec) (*CreateResult, error) {
	id := v1alpha1.BackupWorkflowID(spec.Name)
	desc, err := c.temporal.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("describe existing backup %s: %w", spec.Name, err)
	}
	return c.sameSpecRun(desc.GetWorkflowExecutionInfo(), "backup", spec.Name, spec.Hash())
}
