package starter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// RunView is everything cairn knows of one backup or restore: S is its
// spec, T its status.
type RunView[S any, T phased] struct {
	Name       string         `json:"name"`
	Phase      v1alpha1.Phase `json:"phase"`
	Spec       *S             `json:"spec,omitempty"`
	Status     *T             `json:"status,omitempty"`
	Location   string         `json:"location,omitempty"`
	WorkflowID string         `json:"workflowId,omitempty"`
	RunID      string         `json:"runId,omitempty"`
	StartTime  *time.Time     `json:"startTime,omitempty"`
	EndTime    *time.Time     `json:"endTime,omitempty"`
	Source     string         `json:"source"`
	UIURL      string         `json:"uiUrl,omitempty"`
	// Format is the tool that wrote a backup: v1alpha1.BackupFormatCairn
	// or v1alpha1.BackupFormatVelero.
	Format string `json:"format,omitempty"`
	// ImmutableUntil is when a backup's object lock ends: it cannot be
	// deleted before.
	ImmutableUntil *time.Time `json:"immutableUntil,omitempty"`
	// Retrying are the run's steps that failed and wait for another
	// attempt, with their last error.
	Retrying []RetryingStep `json:"retrying,omitempty"`
	// ActingAs is whom a backup or restore that Temporal remembers acts
	// as towards the cluster; nil for the worker (Temporal's path), and
	// for a run known only from its location.
	ActingAs *v1alpha1.Identity `json:"actingAs,omitempty"`
}

// RetryingStep is a step of a running workflow that failed and is retried.
type RetryingStep struct {
	Step        string `json:"step"`
	Attempt     int32  `json:"attempt"`
	MaxAttempts int32  `json:"maxAttempts,omitempty"`
	LastError   string `json:"lastError"`
}

// phased is a status that knows its phase.
type phased interface{ CurrentPhase() v1alpha1.Phase }

// RestoreView is everything cairn knows of one restore.
type RestoreView = RunView[v1alpha1.RestoreSpec, v1alpha1.RestoreStatus]

// describeRun returns the view of the latest run of a workflow ID, or nil
// when Temporal has none.
func describeRun[S any, T phased](ctx context.Context, c *Client, id string) (*RunView[S, T], error) {
	desc, err := c.temporal.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("describe %s: %w", id, err)
	}
	v := runViewOf[S, T](c, desc.GetWorkflowExecutionInfo())
	v.Retrying = retryingSteps(desc)
	return v, nil
}

// retryingSteps are the pending activities that failed at least once.
func retryingSteps(desc *workflowservice.DescribeWorkflowExecutionResponse) []RetryingStep {
	var out []RetryingStep
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetAttempt() < 2 || pa.GetLastFailure() == nil {
			continue
		}
		out = append(out, RetryingStep{Step: pa.GetActivityType().GetName(), Attempt: pa.GetAttempt(),
			MaxAttempts: pa.GetMaximumAttempts(), LastError: pa.GetLastFailure().GetMessage()})
	}
	return out
}

// runViewOf turns a workflow's execution info into a view without any call.
func runViewOf[S any, T phased](c *Client, info *workflowpb.WorkflowExecutionInfo) *RunView[S, T] {
	id := info.GetExecution().GetWorkflowId()
	v := &RunView[S, T]{
		Name:       keywordAttr(info, v1alpha1.SearchAttrName.GetName()),
		Phase:      v1alpha1.Phase(keywordAttr(info, v1alpha1.SearchAttrPhase.GetName())),
		WorkflowID: id,
		RunID:      info.GetExecution().GetRunId(),
		Source:     SourceTemporal,
		UIURL:      c.RunURL(id, info.GetExecution().GetRunId()),
	}
	if p, ok := info.GetMemo().GetFields()[v1alpha1.MemoLocation]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &v.Location)
	}
	if p, ok := info.GetMemo().GetFields()[v1alpha1.MemoActingAs]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &v.ActingAs)
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
		v.Phase = v1alpha1.PhaseFailed
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		v.Phase = v1alpha1.PhaseCanceled
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		if !v.Phase.Done() {
			v.Phase = v1alpha1.PhaseFailed
		}
	}
	return v
}

// addLiveStatus fills a view's status from its run's status query, and
// its spec, when none was committed, from the request the run started
// with. A closed run needs a worker to replay the query; when none
// answers within StatusQueryTimeout the view keeps what the search
// attributes said.
func addLiveStatus[S any, T phased](ctx context.Context, c *Client, v *RunView[S, T]) {
	if v.Spec == nil {
		v.Spec = startSpec[S](ctx, c, v.WorkflowID, v.RunID)
	}
	qctx, cancel := context.WithTimeout(ctx, c.opts.StatusQueryTimeout)
	defer cancel()
	resp, err := c.temporal.QueryWorkflow(qctx, v.WorkflowID, v.RunID, v1alpha1.QueryStatus)
	if err != nil {
		return
	}
	var status T
	if resp.Get(&status) == nil {
		v.Status = &status
		if p := status.CurrentPhase(); p != "" {
			v.Phase = p
		}
	}
}

// listRuns returns the latest run of each name of one kind, by name.
func listRuns[S any, T phased](ctx context.Context, c *Client, kind string) (map[string]*RunView[S, T], error) {
	byName := map[string]*RunView[S, T]{}
	query := fmt.Sprintf("%s = %q", v1alpha1.SearchAttrKind.GetName(), kind)
	var token []byte
	for {
		resp, err := c.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: c.opts.Namespace, Query: query, NextPageToken: token,
		})
		var invalid *serviceerror.InvalidArgument
		if errors.As(err, &invalid) && strings.Contains(invalid.Error(), "search attribute") {
			// No worker has registered cairn's search attributes on this
			// namespace yet, so Temporal holds no cairn runs.
			return byName, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s workflows: %w", kind, err)
		}
		for _, info := range resp.GetExecutions() {
			v := runViewOf[S, T](c, info)
			if v.Name == "" {
				continue
			}
			if prev, ok := byName[v.Name]; !ok || later(v.StartTime, prev.StartTime) {
				byName[v.Name] = v
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return byName, nil
		}
	}
}

// newestFirst sorts views by start time, newest first, then by name.
func newestFirst[S any, T phased](items []*RunView[S, T]) {
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if later(a.StartTime, b.StartTime) {
			return true
		}
		if later(b.StartTime, a.StartTime) {
			return false
		}
		return a.Name < b.Name
	})
}

// later reports whether start time a is after b; an unknown time is
// earliest.
func later(a, b *time.Time) bool {
	switch {
	case a == nil:
		return false
	case b == nil:
		return true
	}
	return a.After(*b)
}

// sameSpecRun answers a create for a name Temporal already has a run of:
// the same request again (its spec hash matches), or a conflict.
func (c *Client) sameSpecRun(info *workflowpb.WorkflowExecutionInfo, what, name, hash string) (*CreateResult, error) {
	var have string
	if p, ok := info.GetMemo().GetFields()[v1alpha1.MemoSpecHash]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &have)
	}
	if have != hash {
		return nil, &ConflictError{Message: fmt.Sprintf("%s %q already exists with a different spec; choose another name", what, name)}
	}
	id, runID := info.GetExecution().GetWorkflowId(), info.GetExecution().GetRunId()
	return &CreateResult{Name: name, WorkflowID: id, RunID: runID, UIURL: c.RunURL(id, runID)}, nil
}

// startSpec reads the spec a run was started with from the first event of
// its history (every cairn request carries it as "spec"); nil when the
// history cannot be read. It needs no worker, unlike a query.
func startSpec[S any](ctx context.Context, c *Client, workflowID, runID string) *S {
	resp, err := c.temporal.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace:       c.opts.Namespace,
		Execution:       &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: runID},
		MaximumPageSize: 1,
	})
	if err != nil {
		return nil
	}
	events := resp.GetHistory().GetEvents()
	if len(events) == 0 {
		return nil
	}
	var req struct {
		Spec *S `json:"spec"`
	}
	if converter.GetDefaultDataConverter().FromPayloads(events[0].GetWorkflowExecutionStartedEventAttributes().GetInput(), &req) != nil {
		return nil
	}
	return req.Spec
}
