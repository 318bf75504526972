package extensiontest

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-backup/cairn/pkg/extension"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// failures runs fn with a recorder and returns what it reported.
func failures(t *testing.T, fn func(tb testing.TB)) string {
	r := &recorder{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() { fn(r) })
	wg.Wait()
	return strings.Join(r.errs, "\n")
}

type answering func(extension.BackupItemsRequest) *extension.BackupItemsResponse

func (a answering) BackupItems(_ context.Context, req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
	return a(req), nil
}

var configmaps = extension.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}

const cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop"}}`

// TestBackupFailsForWhatCairnRefuses: an answer cairn would refuse, and
// a call that answers the wrong number of items, fail the test; a good
// answer does not.
func TestBackupFailsForWhatCairnRefuses(t *testing.T) {
	good := answering(func(req extension.BackupItemsRequest) *extension.BackupItemsResponse {
		return &extension.BackupItemsResponse{Items: make([]extension.BackupItemAnswer, len(req.Items))}
	})
	if got := failures(t, func(tb testing.TB) { Backup(tb, good, configmaps, json.RawMessage(cm)) }); got != "" {
		t.Fatalf("a good answer failed: %s", got)
	}
	renamed := answering(func(req extension.BackupItemsRequest) *extension.BackupItemsResponse {
		return &extension.BackupItemsResponse{Items: []extension.BackupItemAnswer{{Item: json.RawMessage(strings.Replace(cm, `"a"`, `"b"`, 1))}}}
	})
	if got := failures(t, func(tb testing.TB) { Backup(tb, renamed, configmaps, json.RawMessage(cm)) }); !strings.Contains(got, "another object") {
		t.Fatalf("an answer with another object passed: %q", got)
	}
	short := answering(func(extension.BackupItemsRequest) *extension.BackupItemsResponse {
		return &extension.BackupItemsResponse{}
	})
	if got := failures(t, func(tb testing.TB) { Backup(tb, short, configmaps, json.RawMessage(cm)) }); !strings.Contains(got, "answered 0 items for 1") {
		t.Fatalf("a short answer passed: %q", got)
	}
}

// TestBatchesLikeCairn: items are sent in calls of at most
// MaxBatchBytes.
func TestBatchesLikeCairn(t *testing.T) {
	big := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop"},"data":{"k":"` +
		strings.Repeat("x", extension.MaxBatchBytes/2) + `"}}`)
	calls := 0
	counting := answering(func(req extension.BackupItemsRequest) *extension.BackupItemsResponse {
		calls++
		return &extension.BackupItemsResponse{Items: make([]extension.BackupItemAnswer, len(req.Items))}
	})
	answers := Backup(t, counting, configmaps, big, big, big)
	if len(answers) != 3 || calls != 3 {
		t.Fatalf("want 3 answers in 3 calls, got %d in %d", len(answers), calls)
	}
}
