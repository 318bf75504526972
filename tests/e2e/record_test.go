package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cairn-backup/cairn/workflows"
)

// recordHistory writes the backup's history to workflows/testdata/<file>
// when CAIRN_RECORD_HISTORY=1, for the replay test that guards workflow
// determinism across releases. Run it after a release with:
//
//	CAIRN_RECORD_HISTORY=1 go test ./tests/e2e -run TestBadInput
func recordHistory(t *testing.T, s *stack, backup, file string) {
	t.Helper()
	if os.Getenv("CAIRN_RECORD_HISTORY") != "1" {
		return
	}
	var events []*historypb.HistoryEvent
	it := s.temporalC.GetWorkflowHistory(context.Background(), workflows.BackupWorkflowID(backup), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		events = append(events, ev)
	}
	data, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	require.NoError(t, err)
	path := filepath.Join("..", "..", "workflows", "testdata", file)
	require.NoError(t, os.WriteFile(path, append(data, '\n'), 0o644))
	t.Logf("recorded %d events of %s into %s", len(events), backup, path)
}
