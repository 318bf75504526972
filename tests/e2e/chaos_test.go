package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/cairn-backup/cairn/activities/expose/exposer"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/datatree"
	"github.com/cairn-backup/cairn/starter"
)

// chaosKillsPerRun bounds the kills of one backup or restore, and
// chaosMoverKillsPerRun those of its data movers, which a volume's move
// has a few attempts for: chaos tests recovery, not the bounds.
const (
	chaosKillsPerRun      = 8
	chaosMoverKillsPerRun = 2
)

// TestChaos (`make chaos`, not part of `make test`): a backup of
// ConfigMaps and a volume whose data moves, then its restore, while
// SIGKILLs hit the worker, the Temporal server and data movers at random
// moments. Every object is backed up and restored exactly once and the
// volume comes back byte-identical. It prints how many kills landed in
// which step. CAIRN_CHAOS_SEED replays a run's random choices.
func TestChaos(t *testing.T) {
	t.Parallel()
	if os.Getenv("CAIRN_CHAOS") == "" {
		t.Skip("`make chaos` runs it (CAIRN_CHAOS=1)")
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CAIRN_CHAOS_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "CAIRN_CHAOS_SEED")
	}
	t.Logf("chaos seed %d (CAIRN_CHAOS_SEED=%d replays its choices)", seed, seed)
	m := newMoverStack(t)
	ctx := context.Background()
	objects := seedConfigMaps(t, m.cluster.Config(), "chaosc", seedNamespaces, 100)
	makeClaims(t, m.stack, "chaos", "data")
	data := fillVolume(t, m.stack, "chaos", "data", mediumData(seed%1000))
	c := &chaosMonkey{t: t, m: m, rng: rand.New(rand.NewPCG(seed, 1)), kills: map[string]int{}}
	c.worker = c.startWorker()

	req := moveRequest("chaos-1", "chaos")
	req.IncludedNamespaces = append(req.IncludedNamespaces, "chaosc-*")
	_, err := m.starter.CreateBackup(ctx, req)
	require.NoError(t, err)
	c.until(v1alpha1.BackupWorkflowID("chaos-1"))
	v := m.waitDone("chaos-1", 10*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, v.Phase, "%+v", v.Status)
	counts := tarballCounts(t, m.stack, "chaos-1")
	for key := range objects {
		assert.Equal(t, 1, counts["configmaps"][key], "ConfigMap %s in the tarball", key)
	}
	for key, n := range counts["configmaps"] {
		assert.True(t, objects[key] || strings.HasSuffix(key, "/kube-root-ca.crt"), "unexpected ConfigMap %s", key)
		assert.Equal(t, 1, n, "ConfigMap %s stored %d times", key, n)
	}
	assert.Equal(t, map[string]int{"chaos/data": 1}, counts["persistentvolumeclaims"])

	mapping := map[string]string{}
	for i := range seedNamespaces {
		ns := fmt.Sprintf("chaosc-%02d", i)
		mapping[ns] = ns
		deleteNamespace(t, m.cluster.Config(), ns)
	}
	deleteNamespace(t, m.cluster.Config(), "chaos")
	_, err = m.starter.CreateRestore(ctx, starter.CreateRestoreRequest{RestoreSpec: v1alpha1.RestoreSpec{Name: "chaos-r1", BackupName: "chaos-1"}})
	require.NoError(t, err)
	c.until(v1alpha1.RestoreWorkflowID("chaos-r1"))
	r := m.waitRestore("chaos-r1", 10*time.Minute)
	require.Equal(t, v1alpha1.PhaseCompleted, r.Phase, "%+v", r.Status)
	assertRestoredSeed(t, m.stack, mapping, objects)
	assert.Empty(t, datatree.Diff(data, digestVolume(t, m.stack, "chaos", "data"), 10), "the volume is byte-identical")

	report, _ := json.Marshal(map[string]any{"seed": seed, "kills": c.kills})
	fmt.Println(string(report))
	t.Logf("kills by victim and step: %s", report)
}

// chaosMonkey kills one of the stack's processes at random moments and
// starts it again, counting the kills by victim and by the steps that
// were running.
type chaosMonkey struct {
	t      *testing.T
	m      *moverStack
	rng    *rand.Rand
	worker *proc
	kills  map[string]int
}

// startWorker starts a worker whose data movers upload and download
// slowly enough for the kills to land while they move data.
func (c *chaosMonkey) startWorker() *proc {
	return c.m.startMoverWorkerArgs(repoPassword, nil, append(throttled, "CAIRN_DOWNLOAD_BYTES_PER_SECOND=10000000")...)
}

// until kills until the workflow has closed, or the run's kills are
// spent.
func (c *chaosMonkey) until(workflowID string) {
	kills, moverKills := 0, 0
	for kills < chaosKillsPerRun {
		// A random moment is what chaos is; no verdict hangs on it.
		time.Sleep(time.Duration(500+c.rng.IntN(4000)) * time.Millisecond)
		if c.closed(workflowID) {
			return
		}
		where := "between steps"
		if steps := strings.Join(c.steps(workflowID, 3), "+"); steps != "" {
			where = "during " + steps
		}
		victim := []string{"worker", "temporal", "data mover"}[c.rng.IntN(3)]
		movers := exposer.Running(c.m.stateDir)
		if victim == "data mover" && (len(movers) == 0 || moverKills >= chaosMoverKillsPerRun) {
			victim = "worker"
		}
		switch victim {
		case "worker":
			c.worker.kill()
			c.worker = c.startWorker()
		case "temporal":
			c.m.temporal.kill()
			c.m.startTemporal() // same port, same SQLite file
		case "data mover":
			require.NoError(c.t, syscall.Kill(movers[c.rng.IntN(len(movers))], syscall.SIGKILL))
			moverKills++
		}
		kills++
		c.kills[victim+" "+where]++
		c.t.Logf("chaos: killed the %s %s", victim, where)
	}
}

// closed reports whether the workflow has ended; false while Temporal
// does not answer.
func (c *chaosMonkey) closed(workflowID string) bool {
	desc, err := c.m.temporalC.DescribeWorkflowExecution(context.Background(), workflowID, "")
	return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// steps names the activities the workflow and its running children, to
// depth levels down, have started.
func (c *chaosMonkey) steps(workflowID string, depth int) []string {
	desc, err := c.m.temporalC.DescribeWorkflowExecution(context.Background(), workflowID, "")
	if err != nil {
		return nil
	}
	var steps []string
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			steps = append(steps, pa.GetActivityType().GetName())
		}
	}
	if depth > 0 {
		for _, child := range desc.GetPendingChildren() {
			steps = append(steps, c.steps(child.GetWorkflowId(), depth-1)...)
		}
	}
	slices.Sort(steps)
	return slices.Compact(steps)
}
