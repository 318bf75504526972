package devserver_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap/zaptest"

	"github.com/cairn-backup/cairn/dev/devserver"
	"github.com/cairn-backup/cairn/internal/logging"
)

const (
	taskQueue  = "devserver-test"
	kindAttr   = "CairnTestKind"
	kindValue  = "smoke"
	workflowID = "devserver-test/hello"
)

var kindKey = temporal.NewSearchAttributeKeyKeyword(kindAttr)

// helloWorkflow is the trivial workflow the test runs to completion.
func helloWorkflow(ctx workflow.Context, name string) (string, error) {
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	return "hello " + name, nil
}

// TestPersistsAcrossRestart runs a workflow on a fresh server, restarts the
// server on the same data directory and finds the workflow again, in
// history and in visibility by its custom search attribute.
func TestPersistsAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Temporal server")
	}
	dir := t.TempDir()
	log := zaptest.NewLogger(t)
	opts := devserver.Options{
		DataDir:          dir,
		FrontendAddr:     "127.0.0.1:0",
		UIAddr:           "127.0.0.1:0",
		Namespace:        "default",
		Retention:        72 * time.Hour,
		SearchAttributes: map[string]enumspb.IndexedValueType{kindAttr: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
		Log:              log,
	}

	// First start: new database.
	srv := start(t, opts, "cold")
	host, port, err := net.SplitHostPort(srv.FrontendAddress())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.NotEqual(t, "0", port)
	require.True(t, strings.HasPrefix(srv.UIAddress(), "http://127.0.0.1:"), srv.UIAddress())
	assertUIServes(t, srv.UIAddress())
	assertLoopbackListeners(t)

	c := dial(t, srv, opts.Namespace)
	desc, err := c.WorkflowService().DescribeNamespace(context.Background(), &workflowservice.DescribeNamespaceRequest{Namespace: opts.Namespace})
	require.NoError(t, err)
	assert.Equal(t, opts.Retention, desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())

	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(helloWorkflow)
	require.NoError(t, w.Start())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    workflowID,
		TaskQueue:             taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(kindKey.ValueSet(kindValue)),
	}, helloWorkflow, "cairn")
	require.NoError(t, err)
	var got string
	require.NoError(t, run.Get(ctx, &got))
	assert.Equal(t, "hello cairn", got)
	w.Stop()
	// The closed visibility record is written asynchronously; wait for it
	// so the restart below tests persistence, not a lost in-flight task.
	require.Eventually(t, func() bool { return len(listByKind(t, c, opts.Namespace)) == 1 },
		30*time.Second, 100*time.Millisecond, "workflow never appeared in visibility")
	assertUIShowsWorkflow(t, srv.UIAddress(), opts.Namespace)
	c.Close()

	require.NoError(t, srv.Stop())
	require.NoError(t, srv.Stop(), "second Stop")

	// Second start: same database, no UI, another retention; the search
	// attribute exists already.
	opts.UIAddr = ""
	opts.Retention = 48 * time.Hour
	srv = start(t, opts, "warm")
	assert.Empty(t, srv.UIAddress())
	c = dial(t, srv, opts.Namespace)
	// A deadline of its own: the first one covered the run and the restart.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	desc, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: opts.Namespace})
	require.NoError(t, err)
	assert.Equal(t, opts.Retention, desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, run.GetRunID())
	require.NoError(t, err)
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.GetWorkflowExecutionInfo().GetStatus())
	execs := listByKind(t, c, opts.Namespace)
	require.Len(t, execs, 1)
	assert.Equal(t, run.GetRunID(), execs[0].GetExecution().GetRunId())
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, execs[0].GetStatus())
	c.Close()
	require.NoError(t, srv.Stop())

	// A search attribute cannot change type.
	opts.SearchAttributes = map[string]enumspb.IndexedValueType{kindAttr: enumspb.INDEXED_VALUE_TYPE_INT}
	_, err = devserver.Start(context.Background(), opts)
	require.ErrorContains(t, err, kindAttr)
	t.Logf("changing the type fails: %v", err)
}

// TestAddressInUse checks that a taken port is an error from Start, not a
// fatal log inside the server or the UI (which would end the process).
func TestAddressInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	taken := l.Addr().String()

	for name, opts := range map[string]devserver.Options{
		"frontend": {FrontendAddr: taken},
		"ui":       {FrontendAddr: "127.0.0.1:0", UIAddr: taken},
	} {
		t.Run(name, func(t *testing.T) {
			opts.DataDir = t.TempDir()
			_, err := devserver.Start(context.Background(), opts)
			require.ErrorContains(t, err, taken)
		})
	}
}

// TestOptionsValidation covers errors found before anything starts.
func TestOptionsValidation(t *testing.T) {
	for name, opts := range map[string]devserver.Options{
		"no data dir":    {},
		"host not an IP": {DataDir: t.TempDir(), FrontendAddr: "example.com:7233"},
		"no port":        {DataDir: t.TempDir(), FrontendAddr: "127.0.0.1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := devserver.Start(context.Background(), opts)
			require.Error(t, err)
		})
	}
}

// start starts srv and stops it when the test ends.
func start(t *testing.T, opts devserver.Options, label string) *devserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	srv, err := devserver.Start(ctx, opts)
	require.NoError(t, err)
	t.Logf("%s start took %s (frontend %s, ui %q)", label, time.Since(began), srv.FrontendAddress(), srv.UIAddress())
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

func dial(t *testing.T, srv *devserver.Server, namespace string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  srv.FrontendAddress(),
		Namespace: namespace,
		Logger:    logging.NewTemporalLogger(zaptest.NewLogger(t)),
	})
	require.NoError(t, err)
	return c
}

// listByKind is the visibility query the UI would run for the attribute.
func listByKind(t *testing.T, c client.Client, namespace string) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: namespace,
		Query:     kindAttr + ` = "` + kindValue + `" AND ExecutionStatus = "Completed"`,
	})
	require.NoError(t, err)
	return resp.GetExecutions()
}

// assertUIServes checks the UI's index page and a deep link render from
// the embedded assets.
func assertUIServes(t *testing.T, base string) {
	t.Helper()
	for _, path := range []string{"/", "/namespaces/default/workflows"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Contains(t, strings.ToLower(string(body)), "<html", path)
	}
}

// assertUIShowsWorkflow checks that the UI's API, which the pages call,
// reaches the frontend and lists the workflow.
func assertUIShowsWorkflow(t *testing.T, base, namespace string) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/namespaces/" + namespace + "/workflows")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Contains(t, string(body), workflowID)
}
