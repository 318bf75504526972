package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// recordHistory writes a run's history to workflows/testdata/<file> when
// CAIRN_RECORD_HISTORY=1, for the replay test that guards workflow
// determinism across releases: every workflow type has one. Run it after
// a release with (docs/development.md's "Changing a workflow" says when):
//
//	make record-histories
func recordHistory(t *testing.T, s *stack, workflowID, file string) {
	t.Helper()
	if os.Getenv("CAIRN_RECORD_HISTORY") != "1" {
		return
	}
	events := runHistory(t, s, workflowID)
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	require.NoError(t, err)
	path := filepath.Join("..", "..", "workflows", "testdata", file)
	require.NoError(t, os.WriteFile(path, append(data, '\n'), 0o644))
	t.Logf("recorded %d events of %s into %s", len(events), workflowID, path)
}

// recordLatest records the newest run of a workflow type, for runs the
// test does not name (a schedule's, a validation's, a node's slots).
func recordLatest(t *testing.T, s *stack, workflowType, file string) {
	t.Helper()
	if os.Getenv("CAIRN_RECORD_HISTORY") != "1" {
		return
	}
	var id string
	until(t, func() bool {
		resp, err := s.temporalC.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: fmt.Sprintf("WorkflowType = %q", workflowType), PageSize: 1})
		require.NoError(t, err)
		if len(resp.GetExecutions()) == 0 {
			return false
		}
		id = resp.GetExecutions()[0].GetExecution().GetWorkflowId()
		return true
	}, time.Minute, 200*time.Millisecond, "no run of %s is listed", workflowType)
	recordHistory(t, s, id, file)
}
