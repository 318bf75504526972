package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/tick"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// maxItemErrors bounds the item errors a type's result names; the rest
// are counted.
const maxItemErrors = 100

// maxCallsInFlight bounds the calls one collect step waits on at once.
const maxCallsInFlight = 8

// pageItem is an item and the index of the pending page it came from.
type pageItem struct {
	kube.Item
	page int
	// additional are the objects extensions asked to back up with it,
	// operations the operations they started for it.
	additional []extension.ObjectRef
	operations []extcall.OperationRecord
}

// extend runs the type's backup actions over the pending pages' items,
// each action over what the one before it answered, and returns each
// page's items to store. An item an action fails is left out and named
// in the type's errors.
func (c *collector) extend(ctx context.Context, pages [][]kube.Item) ([][]pageItem, error) {
	var items []pageItem
	for i, page := range pages {
		for _, it := range page {
			items = append(items, pageItem{Item: it, page: i})
		}
	}
	for _, a := range c.actions {
		var err error
		if items, err = c.runAction(ctx, a, items); err != nil {
			return nil, err
		}
	}
	out := make([][]pageItem, len(pages))
	for _, it := range items {
		out[it.page] = append(out[it.page], it)
	}
	return out, nil
}

// runAction sends the items a selects to it, in batches of at most
// MaxBatchBytes, several calls at once, and applies the answers in the
// items' order.
func (c *collector) runAction(ctx context.Context, a extcall.Action, items []pageItem) ([]pageItem, error) {
	sizes := make([]int, len(items))
	for i, it := range items {
		sizes[i] = len(it.Raw)
	}
	batches := extcall.Split(sizes, func(i int) bool { return a.Selects(items[i].Namespace, items[i].Labels) })
	if len(batches) == 0 {
		return items, nil
	}
	answers := make([][]extension.BackupItemAnswer, len(batches))
	c.setWaiting([]v1alpha1.ExtensionWait{{Extension: a.Ext.Name, TaskQueue: a.Ext.TaskQueue, Since: metav1.Now()}})
	stop := c.heartbeatWhile(ctx)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxCallsInFlight)
	for k, batch := range batches {
		g.Go(func() error {
			var err error
			answers[k], err = c.callBackupItems(gctx, a, items, batch)
			return err
		})
	}
	err := g.Wait()
	stop()
	c.setWaiting(nil)
	if err != nil {
		return nil, err
	}
	answerOf := make(map[int]extension.BackupItemAnswer, len(items))
	for k, batch := range batches {
		for j, i := range batch {
			answerOf[i] = answers[k][j]
		}
	}
	out := items[:0]
	for i, it := range items {
		ans, asked := answerOf[i]
		if !asked {
			out = append(out, it)
			continue
		}
		if kept, ok := c.answered(a, it.Item, ans); ok {
			next := pageItem{Item: kept, page: it.page, additional: append(it.additional, ans.AdditionalItems...), operations: it.operations}
			if ans.Operation != nil {
				next.operations = append(next.operations, c.operationRecord(a, kept, ans.Operation))
			}
			out = append(out, next)
		}
	}
	return out, nil
}

// callBackupItems sends items[batch] to the extension and returns one
// answer per item. A call the extension refused or never answered fails
// each item of the batch with the reason.
func (c *collector) callBackupItems(ctx context.Context, a extcall.Action, items []pageItem, batch []int) ([]extension.BackupItemAnswer, error) {
	req := extension.BackupItemsRequest{Backup: c.in.Backup, Extension: a.Ext.Name, DryRun: c.in.DryRun,
		Resource: extension.Resource{Group: c.res.GVR.Group, Version: c.res.GVR.Version, Resource: c.res.GVR.Resource, Kind: c.res.Kind}}
	var raws extcall.Batch
	for _, i := range batch {
		req.Items = append(req.Items, json.RawMessage(items[i].Raw))
		raws = append(raws, items[i].Raw)
	}
	answers, failed, err := extcall.Do[extension.BackupItemAnswer](ctx, c.a.Extensions, extcall.Request{Run: c.in.Backup, Extension: a.Ext,
		Activity: extension.BackupItemsV1, Scope: c.gr, Items: raws, Payload: req})
	if err != nil || failed == "" {
		return answers, err
	}
	answers = make([]extension.BackupItemAnswer, len(batch))
	for k := range answers {
		answers[k].Error = failed
	}
	return answers, nil
}

// answered applies one answer to its item: the item to store, or false
// when the answer fails it.
func (c *collector) answered(a extcall.Action, it kube.Item, ans extension.BackupItemAnswer) (kube.Item, bool) {
	fail := func(msg string) (kube.Item, bool) {
		c.itemError(it, fmt.Sprintf("extension %s: %s", a.Ext.Name, msg))
		return kube.Item{}, false
	}
	if ans.Error != "" {
		return fail(ans.Error)
	}
	if problem := extension.CheckBackupAnswer(it.Raw, ans); problem != "" {
		return fail(problem)
	}
	if extension.Unchanged(ans.Item) {
		return it, true
	}
	changed, err := kube.DecodeItem(ans.Item, c.res)
	if err != nil {
		return fail("its item is not a Kubernetes object: " + err.Error())
	}
	return changed, true
}

// operationRecord is what the operations step needs of an operation an
// answer started for item it.
func (c *collector) operationRecord(a extcall.Action, it kube.Item, op *extension.OperationStart) extcall.OperationRecord {
	gvr := c.res.GVR
	return extcall.OperationRecord{Extension: a.Ext.Name, ID: op.ID,
		Resource:      extension.Resource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Kind: c.res.Kind},
		Item:          extension.ObjectRef{Group: gvr.Group, Resource: gvr.Resource, Namespace: it.Namespace, Name: it.Name},
		ItemsToUpdate: op.ItemsToUpdate, Data: op.Data}
}

func identity(it kube.Item) string {
	if it.Namespace == "" {
		return it.Name
	}
	return it.Namespace + "/" + it.Name
}

// itemError records that an item was left out, naming the first
// maxItemErrors.
func (c *collector) itemError(it kube.Item, msg string) {
	p := &c.progress
	p.ItemErrorsTotal++
	if len(p.ItemErrors) < maxItemErrors {
		p.ItemErrors = append(p.ItemErrors, identity(it)+": "+msg)
	}
	c.log.Warn("Item left out", zap.String("item", identity(it)), zap.String("reason", msg))
}

// heartbeatWhile keeps the step's heartbeat going while it waits on a
// call; the progress it carries does not change meanwhile.
func (c *collector) heartbeatWhile(ctx context.Context) (stop func()) {
	return tick.Every(c.a.waitBeat(ctx), func() { c.heartbeat(ctx) })
}

// waitBeat is how often a step heartbeats while it waits on extensions:
// callBeat, or a third of the step's heartbeat timeout.
func (a *Activities) waitBeat(ctx context.Context) time.Duration {
	if a.callBeat > 0 {
		return a.callBeat
	}
	return extcall.BeatEvery(ctx)
}

// storeExtensionRecords records the additional items asked for with a
// page's items and the operations started for them, before the page
// itself: CollectAdditional and RunOperations read them.
func (c *collector) storeExtensionRecords(ctx context.Context, partKey string, items []pageItem) error {
	var refs, ops []any
	for _, it := range items {
		for _, r := range it.additional {
			refs = append(refs, r)
		}
		for _, op := range it.operations {
			ops = append(ops, op)
		}
	}
	if err := c.storeLines(ctx, c.run.Keys.AdditionalRefs(partKey), refs); err != nil {
		return err
	}
	return c.storeLines(ctx, c.run.Keys.ExtensionOperations(partKey), ops)
}

// storeLines writes values as JSON lines under key; none deletes what an
// attempt before this one wrote there.
func (c *collector) storeLines(ctx context.Context, key string, values []any) error {
	if len(values) == 0 {
		return c.run.Loc.Delete(ctx, key)
	}
	var buf []byte
	for _, v := range values {
		line, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
	}
	return c.run.Loc.WriteAll(ctx, key, buf)
}
