package runlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/cairn-backup/cairn/internal/location"
)

// probeName is the activity type the probes run as; it must show up in
// every line and in the log chunk's key.
const probeName = "RunlogProbe"

// runProbe runs body as the activity probeName, with ctx an activity
// context, and fails the test if it returns an error.
func runProbe(t *testing.T, body func(ctx context.Context) error) *testsuite.TestActivityEnvironment {
	t.Helper()
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(body, activity.RegisterOptions{Name: probeName})
	_, err := env.ExecuteActivity(probeName)
	require.NoError(t, err)
	return env
}

func openLoc(t *testing.T, url string) *location.Location {
	t.Helper()
	loc, err := location.OpenPlain(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	return loc
}

func decodeLines(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return out
}

// TestStartLinesCarryBackupActivityAndAttempt: every captured line names
// the backup, the activity type and the attempt, and also reaches the
// process logger.
func TestStartLinesCarryBackupActivityAndAttempt(t *testing.T) {
	url := "file://" + t.TempDir()
	core, process := observer.New(zap.InfoLevel)
	var captured []byte
	runProbe(t, func(ctx context.Context) error {
		run, err := Start(ctx, nil, zap.New(core), "b1", url)
		if err != nil {
			return err
		}
		defer run.End()
		run.Log.Info("hello", zap.Int("n", 3))
		captured = run.Captured()
		return nil
	})

	lines := decodeLines(t, captured)
	require.Len(t, lines, 1)
	assert.Equal(t, "hello", lines[0]["msg"])
	assert.Equal(t, "info", lines[0]["level"])
	assert.Equal(t, "b1", lines[0]["backup"])
	assert.Equal(t, probeName, lines[0]["activity"])
	assert.EqualValues(t, 1, lines[0]["attempt"])
	assert.EqualValues(t, 3, lines[0]["n"])
	assert.Contains(t, lines[0], "ts", "stored lines use the cairn encoder's time key")

	entries := process.FilterMessage("hello").All()
	require.Len(t, entries, 1, "the line also goes to the process log")
	assert.Equal(t, "b1", entries[0].ContextMap()["backup"])
	assert.Equal(t, probeName, entries[0].ContextMap()["activity"])
}

// TestEndStoresTheAttemptsLinesUnderTheBackupsLogsPrefix: End writes the
// captured lines to one chunk per attempt under .logs/, named by start
// time (zero-padded, so lexical order is time order), activity type, id
// and attempt.
func TestEndStoresTheAttemptsLinesUnderTheBackupsLogsPrefix(t *testing.T) {
	url := "file://" + t.TempDir()
	var info activity.Info
	var captured []byte
	runProbe(t, func(ctx context.Context) error {
		run, err := Start(ctx, nil, zap.NewNop(), "b1", url)
		if err != nil {
			return err
		}
		defer run.End()
		run.Log.Info("first")
		run.Log.Warn("second")
		run.Log.Debug("below the captured level")
		info, captured = run.Info(), run.Captured()
		return nil
	})
	require.NotZero(t, info.StartedTime)

	loc := openLoc(t, url)
	keys, err := loc.Keys(context.Background(), "")
	require.NoError(t, err)
	want := fmt.Sprintf("backups/b1/.logs/%020d-%s-%s-%d.jsonl", info.StartedTime.UnixNano(), probeName, info.ActivityID, info.Attempt)
	assert.Equal(t, []string{want}, keys, "one chunk, and nothing else written")

	data, err := loc.ReadAll(context.Background(), want)
	require.NoError(t, err)
	assert.Equal(t, string(captured), string(data))
	var msgs []any
	for _, l := range decodeLines(t, data) {
		msgs = append(msgs, l["msg"])
	}
	assert.Equal(t, []any{"first", "second"}, msgs, "info and above, in order; debug is not kept")
}

// TestEndWithoutLinesWritesNothing: an attempt that logged nothing leaves
// no empty chunk behind.
func TestEndWithoutLinesWritesNothing(t *testing.T) {
	url := "file://" + t.TempDir()
	runProbe(t, func(ctx context.Context) error {
		run, err := Start(ctx, nil, zap.NewNop(), "b1", url)
		if err != nil {
			return err
		}
		run.End()
		return nil
	})
	keys, err := openLoc(t, url).Keys(context.Background(), "")
	require.NoError(t, err)
	assert.Empty(t, keys)
}

// TestStartRestoreNamesTheRestoreAndKeepsItsLogWithTheRestore: a restore's
// lines carry the restore's name, its chunk goes under the restore's
// .logs/, and Keys are those of the backup it reads.
func TestStartRestoreNamesTheRestoreAndKeepsItsLogWithTheRestore(t *testing.T) {
	url := "file://" + t.TempDir()
	var run *Run
	runProbe(t, func(ctx context.Context) error {
		var err error
		if run, err = StartRestore(ctx, nil, zap.NewNop(), "r1", "b1", url); err != nil {
			return err
		}
		defer run.End()
		run.Log.Info("restoring")
		return nil
	})
	assert.Equal(t, location.Backup("b1").Metadata(), run.Keys.Metadata())
	assert.Equal(t, location.Restore("r1").Metadata(), run.Restore.Metadata())

	lines := decodeLines(t, run.Captured())
	require.Len(t, lines, 1)
	assert.Equal(t, "r1", lines[0]["restore"])
	assert.NotContains(t, lines[0], "backup")

	loc := openLoc(t, url)
	keys, err := loc.Keys(context.Background(), "")
	require.NoError(t, err)
	require.Len(t, keys, 1)
	assert.True(t, strings.HasPrefix(keys[0], location.Restore("r1").LogsPrefix()), keys[0])
}

// TestStartRestoreWithoutBackupHasNoBackupKeys: a restore step that reads
// no backup gets zero backup keys, so it cannot touch one by mistake.
func TestStartRestoreWithoutBackupHasNoBackupKeys(t *testing.T) {
	url := "file://" + t.TempDir()
	var run *Run
	runProbe(t, func(ctx context.Context) error {
		var err error
		run, err = StartRestore(ctx, nil, zap.NewNop(), "r1", "", url)
		if err == nil {
			run.End()
		}
		return err
	})
	assert.Equal(t, location.BackupKeys{}, run.Keys)
	assert.Equal(t, location.Restore("r1").Logs(), run.Restore.Logs())
}

// TestStartWithBadLocationFails: an unusable location URL is an error,
// not a run.
func TestStartWithBadLocationFails(t *testing.T) {
	var startErr error
	runProbe(t, func(ctx context.Context) error {
		_, startErr = Start(ctx, nil, zap.NewNop(), "b1", "ftp://host/x")
		return nil
	})
	assert.ErrorContains(t, startErr, "unsupported scheme")
}

// TestJoinLogsOldestChunkFirstThenTheCurrentAttempt: the joined log is one
// gzipped object with every chunk in key (time) order, whatever order they
// were written in, followed by this attempt's lines so far.
func TestJoinLogsOldestChunkFirstThenTheCurrentAttempt(t *testing.T) {
	url := "file://" + t.TempDir()
	keys := location.Backup("b1")
	loc := openLoc(t, url)
	ctx := context.Background()
	require.NoError(t, loc.WriteAll(ctx, keys.LogsPrefix()+"00000000000000000002-Collect-2-1.jsonl", []byte(`{"msg":"later"}`+"\n")))
	require.NoError(t, loc.WriteAll(ctx, keys.LogsPrefix()+"00000000000000000001-Plan-1-1.jsonl", []byte(`{"msg":"earlier"}`+"\n")))
	require.NoError(t, loc.WriteAll(ctx, keys.Work()+"plan.json", []byte(`{"msg":"not a log"}`+"\n")))

	runProbe(t, func(ctx context.Context) error {
		run, err := Start(ctx, nil, zap.NewNop(), "b1", url)
		if err != nil {
			return err
		}
		defer run.End()
		run.Log.Info("joining")
		return run.JoinLogs(ctx, keys.LogsPrefix(), keys.Logs())
	})

	data, err := loc.ReadAll(ctx, keys.Logs())
	require.NoError(t, err)
	var msgs []any
	for _, l := range decodeLines(t, gunzip(t, data)) {
		msgs = append(msgs, l["msg"])
	}
	assert.Equal(t, []any{"earlier", "later", "joining"}, msgs)
}

// TestHeartbeatRecordsTheCount: the heartbeat's details are the count it
// was called with.
func TestHeartbeatRecordsTheCount(t *testing.T) {
	env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
	var got []int
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var n int
		require.NoError(t, details.Get(&n))
		got = append(got, n)
	})
	env.RegisterActivityWithOptions(func(ctx context.Context) error {
		Heartbeat(ctx)(7)
		return nil
	}, activity.RegisterOptions{Name: probeName})
	_, err := env.ExecuteActivity(probeName)
	require.NoError(t, err)
	require.NotEmpty(t, got)
	assert.Equal(t, 7, got[0])
}
