package flowtest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Events each command or incoming message can add to a run's history,
// counted high: the command's own events (scheduled, started, closed;
// initiated, done) plus a whole workflow task (scheduled, started,
// completed) to deliver its outcome, though Temporal often delivers
// several outcomes in one task. Retries add nothing: only the last
// attempt of an activity is written. TestEventBoundCoversRecordedHistories
// checks these against histories recorded from real runs.
const (
	// A run: started, its first workflow task, and how it closed.
	eventsPerRun = 1 + 3 + 1
	// Scheduled, started, closed, and a cancel request.
	eventsPerActivity = 4 + 3
	// Initiated, started, closed, a cancel request, and a workflow task
	// each for the start and the close.
	eventsPerChild = 4 + 3 + 3
	// Started, and fired or canceled.
	eventsPerTimer = 2 + 3
	// Initiated, and signaled or failed (for a cancel request too).
	eventsPerExternalCall = 2 + 3
	eventsPerSignal       = 1 + 3
	// Accepted and completed.
	eventsPerUpdate = 2 + 3
	// A version's marker, and the search attribute Temporal sets for it.
	eventsPerVersion = 2
)

// Commands is what one workflow run asked of Temporal, and the messages
// it received.
type Commands struct {
	Activities      int `json:"activities"`
	LocalActivities int `json:"localActivities"`
	Children        int `json:"children"`
	Timers          int `json:"timers"`
	ExternalCalls   int `json:"externalCalls"`
	Signals         int `json:"signals"`
	Updates         int `json:"updates"`
	Upserts         int `json:"upserts"`
	SideEffects     int `json:"sideEffects"`
	// Versions counts GetVersion's change IDs: only the first call of
	// each writes a marker.
	Versions int `json:"versions"`
}

// Events bounds from above the events these commands add to the run's
// history.
func (c Commands) Events() int {
	return eventsPerRun +
		eventsPerActivity*c.Activities +
		c.LocalActivities + // a marker each
		eventsPerChild*c.Children +
		eventsPerTimer*c.Timers +
		eventsPerExternalCall*c.ExternalCalls +
		eventsPerSignal*c.Signals +
		eventsPerUpdate*c.Updates +
		c.Upserts +
		c.SideEffects +
		eventsPerVersion*c.Versions
}

func (c Commands) String() string {
	return fmt.Sprintf("≤%d events: %d activities, %d children, %d timers, %d signals out, %d signals in, %d upserts, %d versions",
		c.Events(), c.Activities+c.LocalActivities, c.Children, c.Timers, c.ExternalCalls, c.Signals, c.Upserts, c.Versions)
}

// HistoryEvents is a worker interceptor that counts, per workflow run,
// what each run asks of Temporal. Give it to a test environment
// (SetWorkerOptions) or a replayer.
type HistoryEvents struct {
	interceptor.WorkerInterceptorBase
	mu       sync.Mutex
	runs     map[Run]*Commands
	versions map[Run]map[string]bool
}

// Run names a workflow run.
type Run struct {
	Type       string
	WorkflowID string
	RunID      string
}

func NewHistoryEvents() *HistoryEvents {
	return &HistoryEvents{runs: map[Run]*Commands{}, versions: map[Run]map[string]bool{}}
}

// Runs are the counts of every run seen, by run.
func (h *HistoryEvents) Runs() map[Run]Commands {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[Run]Commands, len(h.runs))
	for r, c := range h.runs {
		out[r] = *c
	}
	return out
}

// OfType are the counts of the runs of one workflow type, in workflow
// ID order.
func (h *HistoryEvents) OfType(workflowType string) []Commands {
	runs := h.Runs()
	var keys []Run
	for r := range runs {
		if r.Type == workflowType {
			keys = append(keys, r)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].WorkflowID+keys[i].RunID < keys[j].WorkflowID+keys[j].RunID })
	out := make([]Commands, len(keys))
	for i, k := range keys {
		out[i] = runs[k]
	}
	return out
}

// Sorted orders runs' counts by their bound, then by what they hold,
// to compare runs whose order does not matter.
func Sorted(runs []Commands) []Commands {
	out := slices.Clone(runs)
	sort.Slice(out, func(i, j int) bool {
		return fmt.Sprintf("%08d %+v", out[i].Events(), out[i]) < fmt.Sprintf("%08d %+v", out[j].Events(), out[j])
	})
	return out
}

// Summary lists every run's counts, for a failing test's message.
func (h *HistoryEvents) Summary() string {
	var lines []string
	for r, c := range h.Runs() {
		lines = append(lines, fmt.Sprintf("%s %s: %s", r.Type, r.WorkflowID, c))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func (h *HistoryEvents) add(run Run, f func(*Commands)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.runs[run]
	if c == nil {
		c = &Commands{}
		h.runs[run] = c
	}
	f(c)
}

func (h *HistoryEvents) addVersion(run Run, changeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.versions[run] == nil {
		h.versions[run] = map[string]bool{}
	}
	if !h.versions[run][changeID] {
		h.versions[run][changeID] = true
		h.runs[run].Versions++
	}
}

func (h *HistoryEvents) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	info := workflow.GetInfo(ctx)
	run := Run{Type: info.WorkflowType.Name, WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
	h.add(run, func(*Commands) {})
	return &countingInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, h: h, run: run}
}

type countingInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	h   *HistoryEvents
	run Run
}

func (i *countingInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&countingOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, in: i})
}

func (i *countingInbound) count(f func(*Commands)) { i.h.add(i.run, f) }

func (i *countingInbound) HandleSignal(ctx workflow.Context, in *interceptor.HandleSignalInput) error {
	i.count(func(c *Commands) { c.Signals++ })
	return i.Next.HandleSignal(ctx, in)
}

func (i *countingInbound) ExecuteUpdate(ctx workflow.Context, in *interceptor.UpdateInput) (any, error) {
	i.count(func(c *Commands) { c.Updates++ })
	return i.Next.ExecuteUpdate(ctx, in)
}

// countingOutbound counts the calls that become commands. Sleep and the
// Await variants with a timeout call NewTimerWithOptions through the
// chain, so they are counted there, once.
type countingOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	in *countingInbound
}

func (o *countingOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.in.count(func(c *Commands) { c.Activities++ })
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *countingOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.in.count(func(c *Commands) { c.LocalActivities++ })
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *countingOutbound) ExecuteChildWorkflow(ctx workflow.Context, childWorkflowType string, args ...any) workflow.ChildWorkflowFuture {
	o.in.count(func(c *Commands) { c.Children++ })
	return o.Next.ExecuteChildWorkflow(ctx, childWorkflowType, args...)
}

func (o *countingOutbound) NewTimer(ctx workflow.Context, d time.Duration) workflow.Future {
	o.in.count(func(c *Commands) { c.Timers++ })
	return o.Next.NewTimer(ctx, d)
}

func (o *countingOutbound) NewTimerWithOptions(ctx workflow.Context, d time.Duration, options workflow.TimerOptions) workflow.Future {
	o.in.count(func(c *Commands) { c.Timers++ })
	return o.Next.NewTimerWithOptions(ctx, d, options)
}

func (o *countingOutbound) RequestCancelExternalWorkflow(ctx workflow.Context, workflowID, runID string) workflow.Future {
	o.in.count(func(c *Commands) { c.ExternalCalls++ })
	return o.Next.RequestCancelExternalWorkflow(ctx, workflowID, runID)
}

func (o *countingOutbound) SignalExternalWorkflow(ctx workflow.Context, workflowID, runID, signalName string, arg any) workflow.Future {
	o.in.count(func(c *Commands) { c.ExternalCalls++ })
	return o.Next.SignalExternalWorkflow(ctx, workflowID, runID, signalName, arg)
}

func (o *countingOutbound) SignalChildWorkflow(ctx workflow.Context, workflowID, signalName string, arg any) workflow.Future {
	o.in.count(func(c *Commands) { c.ExternalCalls++ })
	return o.Next.SignalChildWorkflow(ctx, workflowID, signalName, arg)
}

func (o *countingOutbound) UpsertSearchAttributes(ctx workflow.Context, attributes map[string]any) error {
	o.in.count(func(c *Commands) { c.Upserts++ })
	return o.Next.UpsertSearchAttributes(ctx, attributes)
}

func (o *countingOutbound) UpsertTypedSearchAttributes(ctx workflow.Context, attributes ...temporal.SearchAttributeUpdate) error {
	o.in.count(func(c *Commands) { c.Upserts++ })
	return o.Next.UpsertTypedSearchAttributes(ctx, attributes...)
}

func (o *countingOutbound) UpsertMemo(ctx workflow.Context, memo map[string]any) error {
	o.in.count(func(c *Commands) { c.Upserts++ })
	return o.Next.UpsertMemo(ctx, memo)
}

func (o *countingOutbound) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	o.in.h.addVersion(o.in.run, changeID)
	return o.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
}

func (o *countingOutbound) SideEffect(ctx workflow.Context, f func(ctx workflow.Context) any) converter.EncodedValue {
	o.in.count(func(c *Commands) { c.SideEffects++ })
	return o.Next.SideEffect(ctx, f)
}

func (o *countingOutbound) MutableSideEffect(ctx workflow.Context, id string, f func(ctx workflow.Context) any, equals func(a, b any) bool) converter.EncodedValue {
	o.in.count(func(c *Commands) { c.SideEffects++ })
	return o.Next.MutableSideEffect(ctx, id, f, equals)
}
