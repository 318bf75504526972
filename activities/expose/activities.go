// Package expose holds the worker's side of data movement: expose a
// volume to a data mover and start it, say why one did not start, and
// clean up after it. The exposer (pod or local process) does the work.
package expose

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairn-backup/cairn/internal/location"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/runlog"
)

// Activities expose volumes with Exposer, in Namespace.
type Activities struct {
	Exposer   exposer.Exposer
	Namespace string
	Log       *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener
	// Concurrency is how many data movers a node runs at once.
	Concurrency Concurrency
	// Temporal starts a node's slots workflow with the first request.
	Temporal SignalStarter
	// PodsDir is the kubelet's directory of pods on every node (default
	// DefaultPodsDir): a file-system backup reads <PodsDir>/<uid>/volumes.
	PodsDir string
	// StartWatchInterval is how often WatchDataMoverStart looks (default
	// a second).
	StartWatchInterval time.Duration
}

// DefaultPodsDir is where the kubelet keeps its pods' directories unless
// its --root-dir says otherwise.
const DefaultPodsDir = "/var/lib/kubelet/pods"

// Concurrency is the data mover limit per node: Default, or the node's
// override.
type Concurrency struct {
	Default int
	ByNode  map[string]int
}

// For is the limit of node.
func (c Concurrency) For(node string) int {
	if n, ok := c.ByNode[node]; ok && n > 0 {
		return n
	}
	return max(c.Default, 1)
}

// SignalStarter signals a workflow, starting it if needed, and describes
// one; a Temporal client is one.
type SignalStarter interface {
	SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

func (a *Activities) target(in v1alpha1.ExposeInput) exposer.Target {
	t := exposer.Target{
		Owner: in.Owner, Mode: exposer.Mode(in.Mode), Namespace: a.Namespace,
		SourceNamespace: in.Volume.Namespace, Snapshot: in.Snapshot, SourceClaim: in.Volume.Claim, Size: in.SnapshotSize,
		StorageClass: in.Volume.StorageClass, AccessModes: in.AccessModes, TaskQueue: in.TaskQueue, Attempt: in.Attempt,
	}
	if pv := in.Volume.PodVolume; pv != nil {
		podsDir := cmp.Or(a.PodsDir, DefaultPodsDir)
		t.Pod, t.PodUID, t.Node = in.Volume.Namespace+"/"+pv.Pod, pv.UID, pv.Node
		t.HostDir = podVolumeDir(podsDir, pv)
		if in.Mode == v1alpha1.ExposeFSRestore && t.HostDir != "" {
			t.MarkerDir = podVolumeDir(podsDir, &v1alpha1.PodVolume{UID: pv.UID, Dir: markerDir})
		}
	}
	return t
}

// podVolumeDir is a pod volume's directory on its node. The plan wrote
// its parts, but they cross a process boundary: parts that would leave
// the pod's volumes directory name nothing ("").
func podVolumeDir(podsDir string, pv *v1alpha1.PodVolume) string {
	dir := filepath.Clean("/" + pv.Dir)
	if pv.UID == "" || pv.UID == "." || pv.UID == ".." || strings.ContainsRune(pv.UID, '/') || !strings.HasPrefix(dir, "/volumes/") {
		return ""
	}
	return filepath.Join(podsDir, pv.UID, dir)
}

// start opens the owner's log for this attempt.
func (a *Activities) start(ctx context.Context, in v1alpha1.ExposeInput) (*runlog.Run, error) {
	var run *runlog.Run
	var err error
	if in.Mode == v1alpha1.ExposeRestore || in.Mode == v1alpha1.ExposeFSRestore {
		run, err = runlog.StartRestore(ctx, a.Locations, a.Log, in.Owner, "", in.Location)
	} else {
		run, err = runlog.Start(ctx, a.Locations, a.Log, in.Owner, in.Location)
	}
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	return run, nil
}

// heartbeat records where the exposure waits, for the Temporal UI and a
// live heartbeat.
func heartbeat(ctx context.Context) func(string) {
	return func(msg string) { activity.RecordHeartbeat(ctx, msg) }
}

// ExposeVolume makes the volume reachable and starts the attempt's data
// mover (or keeps the one that runs).
func (a *Activities) ExposeVolume(ctx context.Context, in v1alpha1.ExposeInput) (*v1alpha1.ExposeResult, error) {
	run, err := a.start(ctx, in)
	if err != nil {
		return nil, err
	}
	defer run.End()
	t := a.target(in)
	if in.Volume.PodVolume != nil && t.HostDir == "" {
		msg := fmt.Sprintf("pod volume %s names no directory below its pod's volumes (uid %q, dir %q)", in.Volume.Key(),
			in.Volume.PodVolume.UID, in.Volume.PodVolume.Dir)
		return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeInvalidSpec, nil)
	}
	started, err := a.Exposer.Expose(ctx, t, heartbeat(ctx))
	if errors.Is(err, exposer.ErrPodGone) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypePodGone, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("expose volume %s: %w", in.Volume.Key(), err)
	}
	run.Log.Info("Data mover started", zap.String("volume", in.Volume.Key()), zap.String("claim", started.Claim),
		zap.String("dataMover", started.DataMover), zap.String("node", started.Node), zap.Int("attempt", in.Attempt))
	return &v1alpha1.ExposeResult{Claim: started.Claim, DataMover: started.DataMover, Node: started.Node}, nil
}

// DiagnoseExposure says why the volume's data mover has not started.
func (a *Activities) DiagnoseExposure(ctx context.Context, in v1alpha1.ExposeInput) (*v1alpha1.DiagnoseResult, error) {
	return &v1alpha1.DiagnoseResult{Reason: a.Exposer.Diagnose(ctx, a.target(in))}, nil
}

// CleanupExposure stops the volume's data movers and deletes what
// exposing it created.
func (a *Activities) CleanupExposure(ctx context.Context, in v1alpha1.ExposeInput) error {
	run, err := a.start(ctx, in)
	if err != nil {
		return err
	}
	defer run.End()
	if err := a.Exposer.Cleanup(ctx, a.target(in), heartbeat(ctx)); err != nil {
		return fmt.Errorf("clean up after the data mover of %s: %w", in.Volume.Key(), err)
	}
	run.Log.Info("Data mover cleaned up", zap.String("volume", in.Volume.Key()))
	return nil
}

// anyNode is the slots of data movers not pinned to a node.
const anyNode = "any-node"

// PlaceDataMover says which node's slots the operation's data mover
// takes, and that node's limit.
func (a *Activities) PlaceDataMover(ctx context.Context, in v1alpha1.ExposeInput) (*v1alpha1.Placement, error) {
	node, err := a.Exposer.Node(ctx, a.target(in))
	if err != nil {
		return nil, fmt.Errorf("place the data mover of %s: %w", in.Volume.Key(), err)
	}
	if node == "" {
		node = anyNode
	}
	return &v1alpha1.Placement{Node: node, Limit: a.Concurrency.For(node)}, nil
}

// RequestDataMoverSlot queues the operation for a slot on its node,
// starting the node's slots workflow if it is not running.
func (a *Activities) RequestDataMoverSlot(ctx context.Context, in v1alpha1.SlotAsk) error {
	id := v1alpha1.DataMoverSlotsWorkflowID(in.Node)
	_, err := a.Temporal.SignalWithStartWorkflow(ctx, id, v1alpha1.SignalAcquireSlot, in.Request,
		client.StartWorkflowOptions{ID: id, TaskQueue: v1alpha1.TaskQueue}, v1alpha1.DataMoverSlotsWorkflowName,
		v1alpha1.SlotsState{Node: in.Node, Limit: in.Request.Limit})
	if err != nil {
		return fmt.Errorf("ask for a data mover slot on %s: %w", in.Node, err)
	}
	return nil
}

// ClosedSlotHolders returns the slot holders whose workflow is no longer
// running (terminated, timed out, or gone).
func (a *Activities) ClosedSlotHolders(ctx context.Context, holders []v1alpha1.SlotRequest) ([]string, error) {
	var closed []string
	for _, h := range holders {
		desc, err := a.Temporal.DescribeWorkflowExecution(ctx, h.WorkflowID, "")
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			closed = append(closed, h.WorkflowID)
		case err != nil:
			return nil, fmt.Errorf("describe slot holder %s: %w", h.WorkflowID, err)
		case desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			closed = append(closed, h.WorkflowID)
		}
	}
	return closed, nil
}
