package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tarball"
	"github.com/cairn-backup/cairn/internal/tick"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// maxDeleteCallsInFlight bounds the delete calls waited on at once.
const maxDeleteCallsInFlight = 8

// maxDeleteErrorsNamed bounds the item errors a failed deletion names.
const maxDeleteErrorsNamed = 10

// RunDeleteActions sends a backup's items, as it holds them, to the
// extensions registered to delete for their type, in batches, and fails
// with every extension's refusal named when any item could not be deleted
// for: the backup is then kept, so nothing an extension made for it is
// orphaned. With no extension registered for deletes it reads nothing.
func (a *Activities) RunDeleteActions(ctx context.Context, in v1alpha1.DeleteActionsInput) (*v1alpha1.DeleteActionsResult, error) {
	res := &v1alpha1.DeleteActionsResult{}
	if !registersDeletes(a.Registered) {
		return res, nil
	}
	if a.Extensions == nil {
		return nil, temporal.NewNonRetryableApplicationError("extensions are registered to delete, but this worker calls none", v1alpha1.ErrTypeExtension, nil)
	}
	loc, err := a.Locations.Open(ctx, in.Location)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	r, err := loc.NewReader(ctx, location.Backup(in.Backup).Resources())
	switch {
	case errors.Is(err, location.ErrNotFound):
		return res, nil
	case err != nil:
		return nil, err
	}
	defer func() { _ = r.Close() }() // read only
	d := &deleteRun{a: a, in: in, log: a.Log.With(zap.String("backup", in.Backup))}
	d.g, d.gctx = errgroup.WithContext(ctx)
	d.g.SetLimit(maxDeleteCallsInFlight)
	// The step waits on calls (each up to its extension's timeout) as
	// much as it reads: it heartbeats on a clock, not per item.
	stop := tick.Every(extcall.BeatEvery(ctx), func() { activity.RecordHeartbeat(ctx) })
	defer stop()
	_, werr := tarball.Walk(r, tarball.Limits{}, func(e tarball.Entry) error {
		// Each item is in the tarball twice: once without a version.
		if e.Version != "" {
			return nil
		}
		return d.add(e)
	})
	d.flushAll()
	if err := errors.Join(werr, d.g.Wait()); err != nil {
		return nil, err
	}
	res.Items, res.Calls = d.items, d.calls
	if d.failedTotal > 0 {
		msg := fmt.Sprintf("extensions could not delete for %d items of backup %s, which is kept: %s", d.failedTotal, in.Backup, strings.Join(d.failed, "; "))
		return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeExtension, nil)
	}
	d.log.Info("Extensions deleted for the backup's items", zap.Int("items", res.Items), zap.Int("calls", res.Calls))
	return res, nil
}

func registersDeletes(exts []v1alpha1.Extension) bool {
	for _, e := range exts {
		if e.Delete != nil {
			return true
		}
	}
	return false
}

// deleteRun batches one type's items per extension as the tarball is
// read, and calls each batch once it is full or the type ends.
type deleteRun struct {
	a    *Activities
	in   v1alpha1.DeleteActionsInput
	log  *zap.Logger
	g    *errgroup.Group
	gctx context.Context

	gr      string
	actions []extcall.Action
	batches []deleteBatch // one per action

	mu          sync.Mutex
	items       int
	calls       int
	failed      []string
	failedTotal int
}

type deleteBatch struct {
	resource extension.Resource
	items    extcall.Batch
	bytes    int
}

func (d *deleteRun) add(e tarball.Entry) error {
	if e.GroupResource != d.gr {
		d.flushAll()
		actions, err := extcall.Actions(d.a.Registered, e.GroupResource, extcall.DeleteSelector)
		if err != nil {
			return err
		}
		d.gr, d.actions, d.batches = e.GroupResource, actions, make([]deleteBatch, len(actions))
	}
	if len(d.actions) == 0 {
		return nil
	}
	var labels map[string]string
	if l := gjson.GetBytes(e.Data, "metadata.labels"); l.Exists() {
		if err := json.Unmarshal([]byte(l.Raw), &labels); err != nil {
			return fmt.Errorf("%s %s/%s: labels: %w", e.GroupResource, e.Namespace, e.Name, err)
		}
	}
	sent := false
	for i, act := range d.actions {
		if !act.Selects(e.Namespace, labels) {
			continue
		}
		b := &d.batches[i]
		if len(b.items) > 0 && b.bytes+len(e.Data) > extension.MaxBatchBytes {
			d.flush(i)
		}
		if len(b.items) == 0 {
			gr := schema.ParseGroupResource(e.GroupResource)
			head := gjson.GetManyBytes(e.Data, "apiVersion", "kind")
			version := tarball.VersionOf(head[0].String())
			b.resource = extension.Resource{Group: gr.Group, Version: version, Resource: gr.Resource, Kind: head[1].String()}
		}
		b.items = append(b.items, append([]byte(nil), e.Data...))
		b.bytes += len(e.Data)
		sent = true
	}
	if sent {
		d.mu.Lock()
		d.items++
		d.mu.Unlock()
	}
	return nil
}

func (d *deleteRun) flushAll() {
	for i := range d.batches {
		d.flush(i)
	}
}

// flush calls the action of index i with its batch, in the background.
func (d *deleteRun) flush(i int) {
	b := d.batches[i]
	if len(b.items) == 0 {
		return
	}
	d.batches[i] = deleteBatch{}
	act, gr := d.actions[i], d.gr
	d.g.Go(func() error {
		req := extension.DeleteItemsRequest{Backup: d.in.Backup, Extension: act.Ext.Name, Resource: b.resource}
		for _, it := range b.items {
			req.Items = append(req.Items, it)
		}
		answers, failed, err := extcall.Do[extension.DeleteItemAnswer](d.gctx, d.a.Extensions, extcall.Request{Run: d.in.Backup, Extension: act.Ext,
			Activity: extension.DeleteItemsV1, Scope: "delete/" + d.in.Deletion + "/" + gr, Items: b.items, Payload: req})
		if err != nil {
			return err
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.calls++
		if failed != "" {
			d.fail(act, gr, fmt.Sprintf("%d items", len(b.items)), failed, len(b.items))
			return nil
		}
		for k, ans := range answers {
			if ans.Error != "" {
				head := gjson.GetManyBytes(b.items[k], "metadata.namespace", "metadata.name")
				d.fail(act, gr, strings.TrimPrefix(head[0].String()+"/"+head[1].String(), "/"), ans.Error, 1)
			}
		}
		return nil
	})
}

// fail records that extension act could not delete for n items (what),
// naming the first few; d.mu is held.
func (d *deleteRun) fail(act extcall.Action, gr, what, msg string, n int) {
	d.failedTotal += n
	if len(d.failed) < maxDeleteErrorsNamed {
		d.failed = append(d.failed, fmt.Sprintf("%s %s: extension %s: %s", gr, what, act.Ext.Name, msg))
	}
	d.log.Warn("Extension could not delete", zap.String("extension", act.Ext.Name), zap.String("resource", gr),
		zap.String("items", what), zap.String("reason", msg))
}
