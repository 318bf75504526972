package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// typeRun is the activity that ran one resource type (a collection of
// its batch, an apply) as its history tells it.
type typeRun struct {
	resource  string
	scheduled time.Time
	completed time.Time
	attempt   int32
}

// collectRuns reads a backup's history and returns the collect activity
// of each resource type; a type scheduled twice fails the test.
func collectRuns(t *testing.T, s *stack, backup string) map[string]*typeRun {
	t.Helper()
	return typeRuns(t, s, v1alpha1.BackupWorkflowID(backup), func(ev *historypb.HistoryEvent) []string {
		var in v1alpha1.CollectInput
		if !activityInput(t, ev, collectActivity, &in) {
			return nil
		}
		var types []string
		for _, rt := range in.Types {
			types = append(types, rt.GroupResource())
		}
		return types
	})
}

// applyRuns is collectRuns for a restore's apply activities.
func applyRuns(t *testing.T, s *stack, restore string) map[string]*typeRun {
	t.Helper()
	return typeRuns(t, s, v1alpha1.RestoreWorkflowID(restore), func(ev *historypb.HistoryEvent) []string {
		var in v1alpha1.ApplyInput
		if !activityInput(t, ev, applyActivity, &in) {
			return nil
		}
		var types []string
		for _, rt := range in.Types {
			types = append(types, rt.GroupResource())
		}
		return types
	})
}

// typeRuns reads the activities of a workflow's history that resourcesOf
// names resource types for (from their scheduled event), by type.
func typeRuns(t *testing.T, s *stack, workflowID string, resourcesOf func(*historypb.HistoryEvent) []string) map[string]*typeRun {
	t.Helper()
	runs := map[string]*typeRun{}
	byEvent := map[int64][]*typeRun{}
	for _, ev := range runHistory(t, s, workflowID) {
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			for _, gr := range resourcesOf(ev) {
				require.NotContains(t, runs, gr, "resource type %s scheduled twice", gr)
				r := &typeRun{resource: gr, scheduled: ev.GetEventTime().AsTime()}
				runs[gr] = r
				byEvent[ev.GetEventId()] = append(byEvent[ev.GetEventId()], r)
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			attrs := ev.GetActivityTaskStartedEventAttributes()
			for _, r := range byEvent[attrs.GetScheduledEventId()] {
				r.attempt = attrs.GetAttempt()
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			for _, r := range byEvent[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] {
				r.completed = ev.GetEventTime().AsTime()
			}
		}
	}
	return runs
}

// activityInput decodes the input of a scheduled event of activity into
// in; false for any other event.
func activityInput(t *testing.T, ev *historypb.HistoryEvent, activity string, in any) bool {
	t.Helper()
	attrs := ev.GetActivityTaskScheduledEventAttributes()
	if attrs.GetActivityType().GetName() != activity {
		return false
	}
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(attrs.GetInput(), in))
	return true
}

// pendingProgress returns where the running collection of one resource
// type stands by its activity's last heartbeat, or false when none is
// collecting it or it has stored no item yet.
func pendingProgress(t *testing.T, s *stack, backup, resource string) (cluster.TypeProgress, bool) {
	t.Helper()
	desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), v1alpha1.BackupWorkflowID(backup), "")
	require.NoError(t, err)
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() != collectActivity || pa.GetHeartbeatDetails() == nil {
			continue
		}
		var p cluster.CollectProgress
		if converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &p) != nil {
			continue
		}
		for _, tp := range append([]cluster.TypeProgress{p.Current}, p.Others...) {
			if tp.Resource == resource && tp.Items > 0 {
				return tp, true
			}
		}
	}
	return cluster.TypeProgress{}, false
}

// waitHeartbeat waits until a pending activity of the workflow (of type
// activity, or any with "") has heartbeat details that decode as P and
// satisfy seen.
func waitHeartbeat[P any](t *testing.T, s *stack, workflowID, activity string, seen func(P) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a bound for a hang, not a verdict
	for {
		desc, err := s.temporalC.DescribeWorkflowExecution(context.Background(), workflowID, "")
		require.NoError(t, err)
		for _, pa := range desc.GetPendingActivities() {
			if activity != "" && pa.GetActivityType().GetName() != activity {
				continue
			}
			var p P
			if pa.GetHeartbeatDetails() != nil && converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &p) == nil && seen(p) {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "%s: no pending activity's heartbeat showed what the test waits for", workflowID)
		time.Sleep(100 * time.Millisecond) // the poll's pace; the verdict is the heartbeat seen
	}
}

// waitForEvent follows a workflow's latest run as its history grows (a
// long poll: the server answers as events are added) until an event of
// kind is recorded. The run's end without one fails the test.
func waitForEvent(t *testing.T, s *stack, workflowID string, kind enumspb.EventType) {
	t.Helper()
	it := s.temporalC.GetWorkflowHistory(context.Background(), workflowID, "", true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if ev.GetEventType() == kind {
			return
		}
	}
	t.Fatalf("%s ended without a %s event", workflowID, kind)
}

// runHistory returns every event of a workflow's latest run.
func runHistory(t *testing.T, s *stack, workflowID string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := s.temporalC.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		events = append(events, ev)
	}
	return events
}

// logLines returns the backup's stored log lines whose msg is msg.
func logLines(t *testing.T, s *stack, backup, msg string) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, s.starter.BackupLogs(context.Background(), backup, &buf))
	return linesWithMsg(&buf, msg)
}

// linesWithMsg decodes JSON log lines and keeps those whose msg is msg.
func linesWithMsg(buf *bytes.Buffer, msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(buf)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
			out = append(out, line)
		}
	}
	return out
}

// activityCompletedAt is when the run of workflowID recorded the
// completion of its activity named activity; it fails the test when none
// completed.
func activityCompletedAt(t *testing.T, s *stack, workflowID, activity string) time.Time {
	t.Helper()
	events := runHistory(t, s, workflowID)
	scheduled := map[int64]string{}
	for _, ev := range events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == activity {
			return ev.GetEventTime().AsTime()
		}
	}
	require.Failf(t, "activity did not complete", "%s of %s", activity, workflowID)
	return time.Time{}
}
