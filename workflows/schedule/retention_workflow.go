package schedule

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/workflows"
	"github.com/cairn-backup/cairn/workflows/internal/flow"
)

// ApplyRetentionWorkflow deletes the runs a schedule's retention no
// longer keeps, a page at a time: each page is decided afresh from the
// location, deleted, and followed by a continue-as-new while more
// remain, so neither its history nor its payloads grow with the number
// of runs. A page with a failed deletion ends it (the next scheduled run
// tries again), so a deletion that keeps failing cannot loop.
func ApplyRetentionWorkflow(ctx workflow.Context, req v1alpha1.RetentionRequest) (*v1alpha1.RetentionResult, error) {
	logger := log.With(workflow.GetLogger(ctx), "schedule", req.Schedule.Name)
	if req.Limit <= 0 {
		req.Limit = v1alpha1.DefaultRetentionPage
	}
	actx := workflow.WithActivityOptions(ctx, flow.ActivityOptions(10*time.Minute, workflows.HeartbeatTimeout(ctx)))
	var page v1alpha1.RetentionPage
	in := v1alpha1.RetentionPageInput{Schedule: req.Schedule, Now: req.Now, Limit: req.Limit}
	if err := workflow.ExecuteActivity(actx, storeActs.PlanRetention, in).Get(ctx, &page); err != nil {
		return nil, fmt.Errorf("plan the retention of schedule %s: %w", req.Schedule.Name, err)
	}
	if page.Immutable > 0 {
		logger.Info("Retention leaves runs under object lock to a later run", "count", page.Immutable)
	}
	if len(page.Delete) > 0 {
		logger.Info("Retention deletes older runs", "count", len(page.Delete), "more", page.More, "backups", page.Delete, "protected", page.Protected)
	}
	deleted, failed := flow.DeleteBackups(ctx, req.Schedule.RunKind(), page.Delete, req.Schedule.Template.StorageLocation, "retention")
	req.DeletedTotal += len(deleted)
	for _, name := range deleted {
		if len(req.Deleted) < v1alpha1.MaxReportedDeletions {
			req.Deleted = append(req.Deleted, name)
		}
	}
	if page.More > 0 && len(failed) == 0 {
		return nil, workflow.NewContinueAsNewError(ctx, ApplyRetentionWorkflow, req)
	}
	if req.Deleted == nil {
		req.Deleted = []string{}
	}
	return &v1alpha1.RetentionResult{Deleted: req.Deleted, DeletedTotal: req.DeletedTotal, DeleteFailed: failed,
		Interval: page.Interval, LastSuccess: page.LastSuccess}, nil
}
