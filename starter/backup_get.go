package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/cairn-backup/cairn/workflows"
)

// Where a backup's view came from.
const (
	SourceTemporal = "temporal" // a workflow run (running, or closed and still retained)
	SourceLocation = "location" // only backup.json in the location
)

// BackupView is everything cairn knows of one backup.
type BackupView struct {
	Name       string                  `json:"name"`
	Phase      workflows.Phase         `json:"phase"`
	Spec       *workflows.BackupSpec   `json:"spec,omitempty"`
	Status     *workflows.BackupStatus `json:"status,omitempty"`
	Location   string                  `json:"location,omitempty"`
	WorkflowID string                  `json:"workflowId,omitempty"`
	RunID      string                  `json:"runId,omitempty"`
	StartTime  *time.Time              `json:"startTime,omitempty"`
	EndTime    *time.Time              `json:"endTime,omitempty"`
	Source     string                  `json:"source"`
	UIURL      string                  `json:"uiUrl,omitempty"`
}

// GetBackup returns the backup called name: the live status of a running
// one (status query), the committed backup.json of a finished one, or what
// Temporal recorded of one that failed before committing.
func (c *Client) GetBackup(ctx context.Context, name string) (*BackupView, error) {
	id := workflows.BackupWorkflowID(name)
	desc, err := c.temporal.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return c.getFromLocation(ctx, name, c.opts.DefaultLocation)
	case err != nil:
		return nil, fmt.Errorf("describe backup %s: %w", name, err)
	}
	v := c.viewOf(desc.GetWorkflowExecutionInfo())
	if v.Phase.Done() && v.Location != "" {
		if meta, err := readMetadata(ctx, v.Location, name); err == nil {
			v.Phase, v.Spec, v.Status = meta.Status.Phase, &meta.Spec, &meta.Status
			return v, nil
		}
	}
	// Running, or closed without a commit (failed, canceled): the workflow's
	// own status. A query of a closed run needs a worker to replay it; when
	// none answers, the search attributes above are what there is.
	var status workflows.BackupStatus
	if resp, err := c.temporal.QueryWorkflow(ctx, id, v.RunID, workflows.QueryStatus); err == nil && resp.Get(&status) == nil {
		v.Status = &status
		if status.Phase != "" {
			v.Phase = status.Phase
		}
	}
	return v, nil
}

// viewOf turns a workflow's execution info into a view without any call.
func (c *Client) viewOf(info *workflowpb.WorkflowExecutionInfo) *BackupView {
	id := info.GetExecution().GetWorkflowId()
	v := &BackupView{
		Name:       keywordAttr(info, workflows.SearchAttrName.GetName()),
		Phase:      workflows.Phase(keywordAttr(info, workflows.SearchAttrPhase.GetName())),
		WorkflowID: id,
		RunID:      info.GetExecution().GetRunId(),
		Source:     SourceTemporal,
		UIURL:      c.RunURL(id, info.GetExecution().GetRunId()),
	}
	if p, ok := info.GetMemo().GetFields()[workflows.MemoLocation]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &v.Location)
	}
	if t := info.GetStartTime(); t != nil {
		st := t.AsTime().UTC()
		v.StartTime = &st
	}
	if t := info.GetCloseTime(); t != nil && info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		ct := t.AsTime().UTC()
		v.EndTime = &ct
	}
	// The phase attribute lags the run's end when the workflow was
	// terminated or timed out; the execution status is authoritative then.
	switch info.GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		v.Phase = workflows.PhaseFailed
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		v.Phase = workflows.PhaseCanceled
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		if !v.Phase.Done() {
			v.Phase = workflows.PhaseFailed
		}
	}
	return v
}

func (c *Client) getFromLocation(ctx context.Context, name, locationURL string) (*BackupView, error) {
	meta, err := readMetadata(ctx, locationURL, name)
	if err != nil {
		return nil, err
	}
	return viewOfMetadata(meta, locationURL), nil
}

func viewOfMetadata(meta *workflows.BackupMetadata, locationURL string) *BackupView {
	return &BackupView{
		Name: meta.Name, Phase: meta.Status.Phase, Spec: &meta.Spec, Status: &meta.Status,
		Location: locationURL, WorkflowID: meta.WorkflowID, RunID: meta.RunID,
		StartTime: meta.Status.StartTime, EndTime: meta.Status.CompletionTime, Source: SourceLocation,
	}
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
