package starter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/backupmeta"
	"github.com/cairn-backup/cairn/internal/location"
)

// EtcdSnapshotView is everything cairn knows of one etcd snapshot.
type EtcdSnapshotView = RunView[v1alpha1.EtcdSnapshotSpec, v1alpha1.EtcdSnapshotStatus]

// EtcdSnapshotList is the answer of ListEtcdSnapshots.
type EtcdSnapshotList struct {
	Items      []*EtcdSnapshotView `json:"items"`
	Unreadable []string            `json:"unreadable,omitempty"`
}

// CreateEtcdSnapshot validates spec and starts its snapshot. The same
// name with the same spec returns the existing one; with another spec, or
// a name already committed in the location, it is a ConflictError.
func (c *Client) CreateEtcdSnapshot(ctx context.Context, spec v1alpha1.EtcdSnapshotSpec) (*CreateResult, error) {
	spec = spec.WithDefaults(c.opts.DefaultLocation)
	var problems []string
	if err := spec.Validate(); err != nil {
		var invalid *v1alpha1.InvalidSpecError
		if !errors.As(err, &invalid) {
			return nil, err
		}
		problems = invalid.Problems
	}
	normalized, err := c.resolveLocation(spec.StorageLocation, true)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return nil, &InvalidError{Problems: problems}
	}
	spec.StorageLocation = normalized
	if err := c.checkWritable(ctx, spec.StorageLocation); err != nil {
		return nil, err
	}
	if _, err := c.readEtcdSnapshot(ctx, spec.StorageLocation, spec.Name); err == nil {
		return nil, &ConflictError{Message: fmt.Sprintf("etcd snapshot %q already exists in %s; choose another name", spec.Name, location.Display(spec.StorageLocation))}
	}

	id := v1alpha1.EtcdSnapshotWorkflowID(spec.Name)
	hash := etcdSpecHash(spec)
	run, err := c.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                v1alpha1.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo:                                     map[string]any{v1alpha1.MemoSpecHash: hash, v1alpha1.MemoLocation: spec.StorageLocation},
		TypedSearchAttributes: temporal.NewSearchAttributes(
			v1alpha1.SearchAttrKind.ValueSet(v1alpha1.KindEtcdSnapshot),
			v1alpha1.SearchAttrName.ValueSet(spec.Name),
			v1alpha1.SearchAttrPhase.ValueSet(string(v1alpha1.PhaseNew)),
		),
	}, v1alpha1.EtcdSnapshotWorkflowName, v1alpha1.EtcdSnapshotRequest{Spec: spec})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		desc, err := c.temporal.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return nil, fmt.Errorf("describe existing etcd snapshot %s: %w", spec.Name, err)
		}
		return c.sameSpecRun(desc.GetWorkflowExecutionInfo(), "etcd snapshot", spec.Name, hash)
	}
	if err != nil {
		return nil, fmt.Errorf("start etcd snapshot %s: %w", spec.Name, err)
	}
	return &CreateResult{Name: spec.Name, WorkflowID: id, RunID: run.GetRunID(), Created: true, UIURL: c.RunURL(id, run.GetRunID())}, nil
}

func etcdSpecHash(spec v1alpha1.EtcdSnapshotSpec) string {
	data, _ := json.Marshal(spec) // plain fields always encode
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// GetEtcdSnapshot returns the etcd snapshot called name: the live status
// of a running one, snapshot.json of a committed one, or what Temporal
// recorded of one that failed.
func (c *Client) GetEtcdSnapshot(ctx context.Context, name string) (*EtcdSnapshotView, error) {
	v, err := describeRun[v1alpha1.EtcdSnapshotSpec, v1alpha1.EtcdSnapshotStatus](ctx, c, v1alpha1.EtcdSnapshotWorkflowID(name))
	if err != nil {
		return nil, err
	}
	if v == nil || v.Phase.Done() {
		locURL := c.opts.DefaultLocation
		if v != nil && v.Location != "" {
			locURL = v.Location
		}
		meta, err := c.readEtcdSnapshot(ctx, locURL, name)
		switch {
		case err == nil:
			committed := etcdViewOfMetadata(meta, locURL)
			if v != nil {
				committed.UIURL = v.UIURL
			}
			return committed, nil
		case v == nil:
			return nil, err
		case errors.Is(err, ErrNotFound) && v.Phase == v1alpha1.PhaseCompleted:
			v.Phase = v1alpha1.PhaseDeleted
			return v, nil
		}
	}
	addLiveStatus(ctx, c, v)
	return v, nil
}

// ListEtcdSnapshots lists the etcd snapshots Temporal knows and those
// committed in the default location, newest first.
func (c *Client) ListEtcdSnapshots(ctx context.Context) (*EtcdSnapshotList, error) {
	byName, err := listRuns[v1alpha1.EtcdSnapshotSpec, v1alpha1.EtcdSnapshotStatus](ctx, c, v1alpha1.KindEtcdSnapshot)
	if err != nil {
		return nil, err
	}
	list := &EtcdSnapshotList{Items: []*EtcdSnapshotView{}}
	loc, err := c.opts.Opener.Open(ctx, c.opts.DefaultLocation)
	if err != nil {
		return nil, err
	}
	defer loc.Close()
	committed, err := backupmeta.EtcdSnapshots(ctx, loc, "", backupmeta.Hooks{Unreadable: func(name string, err error) {
		list.Unreadable = append(list.Unreadable, name+": "+err.Error())
	}})
	if err != nil {
		return nil, err
	}
	inLocation := map[string]bool{}
	for _, m := range committed {
		inLocation[m.Name] = true
		v := etcdViewOfMetadata(m, c.opts.DefaultLocation)
		if run, ok := byName[m.Name]; ok {
			v.UIURL = run.UIURL
		}
		list.Items = append(list.Items, v)
	}
	for name, v := range byName {
		// Completed runs whose snapshot is gone were deleted: not listed.
		if !inLocation[name] && v.Phase != v1alpha1.PhaseCompleted {
			list.Items = append(list.Items, v)
		}
	}
	newestFirst(list.Items)
	return list, nil
}

// DeleteEtcdSnapshot starts the deletion of an etcd snapshot; a running
// one is a ConflictError.
func (c *Client) DeleteEtcdSnapshot(ctx context.Context, name string) (*CreateResult, error) {
	v, err := c.GetEtcdSnapshot(ctx, name)
	if err != nil {
		return nil, err
	}
	if !v.Phase.Done() {
		return nil, &ConflictError{Message: fmt.Sprintf("etcd snapshot %q is still running (phase %s)", name, v.Phase)}
	}
	if err := c.checkDeletable("etcd snapshot "+name, c.locationOr(v.Location)); err != nil {
		return nil, err
	}
	return c.startDeletion(ctx, v1alpha1.DeleteEtcdWorkflowID(name), v1alpha1.DeleteBackupRequest{
		Backup: name, Location: c.locationOr(v.Location), Reason: "requested", Kind: v1alpha1.KindEtcdSnapshot})
}

func (c *Client) readEtcdSnapshot(ctx context.Context, locationURL, name string) (*v1alpha1.EtcdSnapshotMetadata, error) {
	loc, err := c.opts.Opener.Open(ctx, locationURL)
	if err != nil {
		return nil, err
	}
	defer loc.Close()
	meta, err := backupmeta.ReadEtcdSnapshot(ctx, loc, name)
	if errors.Is(err, location.ErrNotFound) {
		return nil, fmt.Errorf("etcd snapshot %q: %w", name, ErrNotFound)
	}
	return meta, err
}

func etcdViewOfMetadata(m *v1alpha1.EtcdSnapshotMetadata, locationURL string) *EtcdSnapshotView {
	return &EtcdSnapshotView{
		Name: m.Name, Phase: m.Status.Phase, Spec: &m.Spec, Status: &m.Status, Location: locationURL,
		WorkflowID: m.WorkflowID, RunID: m.RunID, StartTime: m.Status.StartTime, EndTime: m.Status.CompletionTime,
		Source: SourceLocation,
	}
}
