package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// recordHistory writes a run's history to workflows/testdata/<file> when
// CAIRN_RECORD_HISTORY=1, for the replay test that guards workflow
// determinism across releases. Run it after a release with:
//
//	CAIRN_RECORD_HISTORY=1 go test ./tests/e2e -run 'TestBadInput|TestRestoreRoundTrip|TestSchedules|TestEtcdSnapshots'
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
