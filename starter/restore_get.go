package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// RestoreList is the answer of ListRestores.
type RestoreList struct {
	Items []*RestoreView `json:"items"`
	// Unreadable names restores whose restore.json could not be read.
	Unreadable []string `json:"unreadable,omitempty"`
}

// GetRestore returns the restore called name: the live status of a running
// one, the recorded restore.json of a finished one.
func (c *Client) GetRestore(ctx context.Context, name string) (*RestoreView, error) {
	v, err := describeRun[v1alpha1.RestoreSpec, v1alpha1.RestoreStatus](ctx, c, v1alpha1.RestoreWorkflowID(name))
	if err != nil {
		return nil, err
	}
	if v == nil {
		meta, err := c.readRestoreMetadata(ctx, c.opts.DefaultLocation, name)
		if err != nil {
			return nil, err
		}
		return restoreViewOf(meta, c.opts.DefaultLocation), nil
	}
	if v.Phase.Done() && v.Location != "" {
		if meta, err := c.readRestoreMetadata(ctx, v.Location, name); err == nil && meta.RunID == v.RunID {
			v.Phase, v.Spec, v.Status = meta.Status.Phase, &meta.Spec, &meta.Status
			return v, nil
		}
	}
	addLiveStatus(ctx, c, v)
	if v.Status != nil && !v.Phase.Done() {
		addMoverProgress(ctx, c, movingVolumes(v.Status))
		addRestoreExtensionWaits(ctx, c, v.WorkflowID, v.Status)
	}
	return v, nil
}

// ListRestores lists the restores Temporal knows of and those recorded in
// the default location, merged by name, newest first.
func (c *Client) ListRestores(ctx context.Context) (*RestoreList, error) {
	byName, err := listRuns[v1alpha1.RestoreSpec, v1alpha1.RestoreStatus](ctx, c, v1alpha1.KindRestore)
	if err != nil {
		return nil, err
	}
	list := &RestoreList{}
	if c.opts.DefaultLocation != "" {
		recorded, unreadable, err := c.recordedRestores(ctx, c.opts.DefaultLocation)
		if err != nil {
			return nil, err
		}
		list.Unreadable = unreadable
		for _, meta := range recorded {
			if v, ok := byName[meta.Name]; ok {
				v.Phase, v.Spec, v.Status = meta.Status.Phase, &meta.Spec, &meta.Status
				continue
			}
			byName[meta.Name] = restoreViewOf(meta, c.opts.DefaultLocation)
		}
	}
	for name, v := range byName {
		if !inNamespace(ctx, name) {
			continue
		}
		if !v.Phase.Done() {
			addLiveStatus(ctx, c, v)
		}
		list.Items = append(list.Items, v)
	}
	newestFirst(list.Items)
	list.Unreadable = unreadableIn(ctx, list.Unreadable)
	return list, nil
}

// CancelRestore asks a running restore to stop. What it applied stays;
// its results say what that was.
func (c *Client) CancelRestore(ctx context.Context, name string) (*RestoreView, error) {
	v, err := c.GetRestore(ctx, name)
	if err != nil {
		return nil, err
	}
	if v.Source != SourceTemporal || v.Phase.Done() {
		return nil, &ConflictError{Message: fmt.Sprintf("restore %q is not running (phase %s); nothing to cancel", name, v.Phase)}
	}
	if err := c.temporal.CancelWorkflow(ctx, v1alpha1.RestoreWorkflowID(name), v.RunID); err != nil {
		return nil, fmt.Errorf("cancel restore %s: %w", name, err)
	}
	return v, nil
}

// RestoreLogs writes the restore's log as JSON lines to w.
func (c *Client) RestoreLogs(ctx context.Context, name string, w io.Writer) error {
	v, err := c.GetRestore(ctx, name)
	if err != nil {
		return err
	}
	keys := location.Restore(name)
	return c.copyLogs(ctx, v.Location, keys.Logs(), keys.LogsPrefix(), w)
}

// RestoreResults returns every item's outcome of a finished restore.
func (c *Client) RestoreResults(ctx context.Context, name string) (*v1alpha1.RestoreResults, error) {
	v, err := c.GetRestore(ctx, name)
	if err != nil {
		return nil, err
	}
	loc, err := c.opts.Opener.Open(ctx, c.locationOr(v.Location))
	if err != nil {
		return nil, err
	}
	defer loc.Close()
	var res v1alpha1.RestoreResults
	err = loc.ReadJSON(ctx, location.Restore(name).Results(), &res)
	if errors.Is(err, location.ErrNotFound) {
		return nil, fmt.Errorf("restore %q has no results yet (phase %s): %w", name, v.Phase, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

func restoreViewOf(meta *v1alpha1.RestoreMetadata, locationURL string) *RestoreView {
	return &RestoreView{
		Name: meta.Name, Phase: meta.Status.Phase, Spec: &meta.Spec, Status: &meta.Status,
		Location: locationURL, WorkflowID: meta.WorkflowID, RunID: meta.RunID,
		StartTime: meta.Status.StartTime, EndTime: meta.Status.CompletionTime, Source: SourceLocation,
	}
}

// readRestoreMetadata reads restore.json of name; ErrNotFound when absent.
func (c *Client) readRestoreMetadata(ctx context.Context, locationURL, name string) (*v1alpha1.RestoreMetadata, error) {
	loc, err := c.opts.Opener.Open(ctx, locationURL)
	if err != nil {
		return nil, err
	}
	defer loc.Close()
	var meta v1alpha1.RestoreMetadata
	err = loc.ReadJSON(ctx, location.Restore(name).Metadata(), &meta)
	if errors.Is(err, location.ErrNotFound) {
		return nil, fmt.Errorf("restore %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &meta, nil
}

// recordedRestores reads every restore.json of a location.
func (c *Client) recordedRestores(ctx context.Context, locationURL string) (restores []*v1alpha1.RestoreMetadata, unreadable []string, err error) {
	loc, err := c.opts.Opener.Open(ctx, locationURL)
	if err != nil {
		return nil, nil, err
	}
	defer loc.Close()
	names, err := loc.Dirs(ctx, location.RestoresPrefix())
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)
	for _, name := range names {
		var meta v1alpha1.RestoreMetadata
		err := loc.ReadJSON(ctx, location.Restore(name).Metadata(), &meta)
		switch {
		case errors.Is(err, location.ErrNotFound):
			continue
		case err != nil:
			unreadable = append(unreadable, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		restores = append(restores, &meta)
	}
	return restores, unreadable, nil
}
