package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

func TestHooksTableShowsWhatEachHookDid(t *testing.T) {
	var buf bytes.Buffer
	hooksTable(&buf, []v1alpha1.HookResult{
		{Pod: "shop/db", Phase: v1alpha1.HookPre, Container: "db", Command: []string{"/bin/sh", "-c", "fsfreeze -f /data"},
			Duration: 1500 * time.Millisecond, Attempt: 2},
		{Pod: "shop/db", Phase: v1alpha1.HookPost, Container: "db", Command: []string{"fsfreeze", "-u", "/data"}, OnError: v1alpha1.HookFail,
			ExitCode: 1, Error: "exit code 1", Stderr: "…old line\nfsfreeze: /data: not frozen\n"},
		{Pod: "shop/web", Phase: v1alpha1.HookPre, Container: "nope", OnError: v1alpha1.HookContinue, ExitCode: -1,
			Error: `pod shop/web has no container "nope" (it has web)`},
	})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	assert.Equal(t, "HOOK\tPOD\tCONTAINER\tCOMMAND\tEXIT\tTOOK\tRESULT", lines[0])
	assert.Equal(t, "pre\tshop/db\tdb\t/bin/sh -c fsfreeze -f /data\t0\t2s\tok (attempt 2)", lines[1])
	assert.Equal(t, "post\tshop/db\tdb\tfsfreeze -u /data\t1\t0s\tfailed (onError Fail): exit code 1: fsfreeze: /data: not frozen", lines[2])
	assert.Equal(t, "pre\tshop/web\tnope\t-\t-\t0s\tfailed (onError Continue): pod shop/web has no container \"nope\" (it has web)", lines[3])
}
