package datamover

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/kopiarepo"
	"github.com/cairn-backup/cairn/internal/tick"
)

// liveInterval is how often a data mover heartbeats whatever kopia
// reported last: heartbeats say the data mover lives, also while kopia
// opens the repository or has nothing new to report.
const liveInterval = 2 * time.Second

// heartbeat sends an activity's progress as its heartbeat details, and
// repeats the latest every liveInterval until stopped.
type heartbeat struct {
	send    func(details any)
	mu      sync.Mutex
	details any
	stop    func()
}

// startHeartbeat heartbeats initial at once, then the latest details
// every liveInterval.
func startHeartbeat(ctx context.Context, initial any) *heartbeat {
	t := time.NewTicker(liveInterval)
	h := beat(func(d any) { activity.RecordHeartbeat(ctx, d) }, initial, t.C)
	stop := h.stop
	h.stop = func() { stop(); t.Stop() }
	return h
}

// beat sends initial, then the latest details on every tick.
func beat(send func(any), initial any, ticks <-chan time.Time) *heartbeat {
	h := &heartbeat{send: send, details: initial}
	send(initial)
	h.stop = tick.On(ticks, func() {
		h.mu.Lock()
		d := h.details
		h.mu.Unlock()
		send(d)
	})
	return h
}

// record makes details the heartbeat's, now and from now on.
func (h *heartbeat) record(details any) {
	h.mu.Lock()
	h.details = details
	h.mu.Unlock()
	h.send(details)
}

// uploadBeat and restoreBeat are the heartbeat details of a data move:
// kopia's counters and, for a view, the sentence they read as.
type uploadBeat struct {
	kopiarepo.UploadProgress
	v1alpha1.MoverProgress
}

type restoreBeat struct {
	kopiarepo.RestoreProgress
	v1alpha1.MoverProgress
}

func beatOfUpload(p kopiarepo.UploadProgress) uploadBeat {
	return uploadBeat{p, v1alpha1.MoverProgress{Progress: p.String()}}
}

func beatOfRestore(p kopiarepo.RestoreProgress) restoreBeat {
	return restoreBeat{p, v1alpha1.MoverProgress{Progress: p.String()}}
}
