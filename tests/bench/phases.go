package main

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/workflows"
)

// phaseSeconds splits a backup's wall time by activity kind, from its
// history: from the first schedule to the last completion of each kind.
func phaseSeconds(ctx context.Context, tc client.Client, backup string) (map[string]float64, error) {
	type span struct{ first, last time.Time }
	spans := map[string]*span{}
	kinds := map[int64]string{}
	it := tc.GetWorkflowHistory(ctx, workflows.BackupWorkflowID(backup), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		at := ev.GetEventTime().AsTime()
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
	return out, nil
}
