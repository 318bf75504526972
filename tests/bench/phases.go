package main

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
)

// phaseSeconds splits a run's wall time by activity kind, from its
// history: from the first schedule to the last completion of each kind.
// It also returns the number of events in the history.
func phaseSeconds(ctx context.Context, tc client.Client, workflowID string, timeline bool) (map[string]float64, int, error) {
	type span struct{ first, last time.Time }
	spans := map[string]*span{}
	kinds := map[int64]string{}
	events := 0
	var start time.Time
	it := tc.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, 0, err
		}
		events++
		at := ev.GetEventTime().AsTime()
		if events == 1 {
			start = at
		}
		if timeline {
			printEvent(ev, at.Sub(start), kinds)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			kind := ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			kinds[ev.GetEventId()] = kind
			if spans[kind] == nil {
				spans[kind] = &span{first: at}
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			if s := spans[kinds[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]]; s != nil {
				s.last = at
			}
		}
	}
	out := map[string]float64{}
	for kind, s := range spans {
		out[kind] = s.last.Sub(s.first).Seconds()
	}
	return out, events, nil
}

// printEvent prints one event of a timeline: when, what, and for an
// activity's events which activity.
func printEvent(ev *historypb.HistoryEvent, since time.Duration, kinds map[int64]string) {
	kind := ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
	for _, id := range []int64{ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId(),
		ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()} {
		if id != 0 {
			kind = kinds[id]
		}
	}
	progress("%8.1f ms  %-3d %s %s", float64(since.Microseconds())/1000, ev.GetEventId(), ev.GetEventType(), kind)
}

// runSeconds waits for a run to close and returns its start-to-close time
// as Temporal saw it: what a user waits for.
func runSeconds(ctx context.Context, tc client.Client, workflowID, runID string) (float64, error) {
	wctx, cancel := context.WithTimeout(ctx, waitBound)
	defer cancel()
	if err := tc.GetWorkflow(wctx, workflowID, runID).Get(wctx, nil); err != nil {
		if wctx.Err() != nil {
			err = context.Cause(wctx)
		}
		return 0, fmt.Errorf("run %s: %w", workflowID, err)
	}
	desc, err := tc.DescribeWorkflowExecution(ctx, workflowID, runID)
	if err != nil {
		return 0, err
	}
	info := desc.GetWorkflowExecutionInfo()
	return info.GetCloseTime().AsTime().Sub(info.GetStartTime().AsTime()).Seconds(), nil
}
