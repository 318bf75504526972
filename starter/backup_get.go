package starter

import (
	"context"
	"errors"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// Where a backup's view came from.
const (
	SourceTemporal = "temporal" // a workflow run (running, or closed and still retained)
	SourceLocation = "location" // only backup.json in the location
)

// BackupView is everything cairn knows of one backup.
type BackupView = RunView[v1alpha1.BackupSpec, v1alpha1.BackupStatus]

// GetBackup returns the backup called name: the live status of a running
// one (status query), the committed metadata of a finished one, or what
// Temporal recorded of one that failed before committing.
func (c *Client) GetBackup(ctx context.Context, name string) (*BackupView, error) {
	v, err := describeRun[v1alpha1.BackupSpec, v1alpha1.BackupStatus](ctx, c, v1alpha1.BackupWorkflowID(name))
	if err != nil {
		return nil, err
	}
	if v == nil {
		return c.getFromLocation(ctx, name, c.opts.DefaultLocation)
	}
	v.Format = v1alpha1.BackupFormatCairn // only cairn backups are workflow runs
	if v.Phase.Done() && v.Location != "" {
		meta, err := c.readMetadata(ctx, v.Location, name)
		switch {
		case err == nil:
			v.Phase, v.Spec, v.Status, v.Format = meta.Status.Phase, &meta.Spec, &meta.Status, meta.Format
			v.ImmutableUntil = meta.ImmutableUntil
			return v, nil
		case errors.Is(err, ErrNotFound) && committedPhase(v.Phase):
			v.Phase = v1alpha1.PhaseDeleted // committed once, gone now
			return v, nil
		}
	}
	// Running, or closed without a commit (failed, canceled): the
	// workflow's own status.
	addLiveStatus(ctx, c, v)
	if v.Status != nil && !v.Phase.Done() {
		addMoverProgress(ctx, c, movingOperations(v.Status))
		addExtensionWaits(ctx, c, v.WorkflowID, v.Status)
	}
	return v, nil
}

func (c *Client) getFromLocation(ctx context.Context, name, locationURL string) (*BackupView, error) {
	meta, err := c.readMetadata(ctx, locationURL, name)
	if err != nil {
		return nil, err
	}
	return viewOfMetadata(meta, locationURL), nil
}

func viewOfMetadata(meta *v1alpha1.BackupMetadata, locationURL string) *BackupView {
	return &BackupView{
		Name: meta.Name, Phase: meta.Status.Phase, Spec: &meta.Spec, Status: &meta.Status,
		Location: locationURL, WorkflowID: meta.WorkflowID, RunID: meta.RunID,
		StartTime: meta.Status.StartTime, EndTime: meta.Status.CompletionTime, Source: SourceLocation,
		Format: meta.Format, ImmutableUntil: meta.ImmutableUntil,
	}
}

// committedPhase reports the phases of a backup that wrote backup.json.
func committedPhase(p v1alpha1.Phase) bool {
	return p == v1alpha1.PhaseCompleted || p == v1alpha1.PhasePartiallyFailed
}

// keywordAttr reads one keyword search attribute of a run.
func keywordAttr(info *workflowpb.WorkflowExecutionInfo, name string) string {
	p, ok := info.GetSearchAttributes().GetIndexedFields()[name]
	if !ok {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		var list []string
		if converter.GetDefaultDataConverter().FromPayload(p, &list) == nil && len(list) > 0 {
			return list[0]
		}
	}
	return s
}
