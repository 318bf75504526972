package hooks

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// TestHookTimeoutsAreBounded: a pod annotation asking a pre hook for a
// year would hold its application frozen that long; the worker's bound
// wins, with a warning naming the hook.
func TestHookTimeoutsAreBounded(t *testing.T) {
	a := &Activities{}
	hs, warnings := a.boundHooks("shop/db", []v1alpha1.PodHook{
		{Source: "pre.hook.backup.velero.io/", Timeout: 8760 * time.Hour},
		{Source: "spec", Timeout: time.Minute},
	})
	assert.Equal(t, v1alpha1.DefaultMaxHookTimeout, hs[0].Timeout)
	assert.Equal(t, time.Minute, hs[1].Timeout, "a timeout within the bound is kept")
	assert.Equal(t, []string{"pod shop/db: hook pre.hook.backup.velero.io/ asks for a timeout of 8760h0m0s; it runs with the limit of 30m0s"}, warnings)

	a.MaxTimeout = 10 * time.Second
	d, cut := a.bound(time.Minute)
	assert.True(t, cut)
	assert.Equal(t, 10*time.Second, d, "the worker's --max-hook-timeout")
}
