package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/internal/tick"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// maxCallsInFlight bounds the calls one batch waits on at once.
const maxCallsInFlight = 8

// selects matches an item as it will be created: its target namespace
// and its labels.
func selects(a extcall.Action, obj map[string]any) bool {
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	labels := map[string]string{}
	if l, ok := meta["labels"].(map[string]any); ok {
		for k, v := range l {
			labels[k], _ = v.(string)
		}
	}
	return a.Selects(ns, labels)
}

// storeRestoreExtensions keeps the registered extensions that act on
// restores in the restore's work area, for its apply and operations
// steps, and counts them.
func (a *Activities) storeRestoreExtensions(ctx context.Context, run *runlog.Run) (int, error) {
	var exts []v1alpha1.Extension
	for _, e := range a.Registered {
		if e.Restore != nil {
			exts = append(exts, e)
		}
	}
	if len(exts) == 0 {
		return 0, run.Loc.Delete(ctx, run.Restore.Extensions())
	}
	return len(exts), run.Loc.WriteJSON(ctx, run.Restore.Extensions(), exts)
}

// plannedExtensions are the extensions the restore's plan kept.
func plannedExtensions(ctx context.Context, run *runlog.Run) ([]v1alpha1.Extension, error) {
	var exts []v1alpha1.Extension
	err := run.Loc.ReadJSON(ctx, run.Restore.Extensions(), &exts)
	switch {
	case errors.Is(err, location.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the restore's extensions: %w", err)
	}
	return exts, nil
}

// actions are the extensions the restore's plan kept that act on type
// gr, in registration order.
func (h *applyPlan) actions(gr string) ([]extcall.Action, error) {
	// As in a backup, what a retry cannot mend ends the step.
	out, err := extcall.Actions(h.exts, gr, extcall.RestoreSelector)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
	}
	if len(out) > 0 && h.a.Extensions == nil {
		return nil, temporal.NewNonRetryableApplicationError("this worker cannot call extensions", v1alpha1.ErrTypeInvalidSpec, nil)
	}
	return out, nil
}

// extend runs the type's restore actions over a batch's items before any
// is applied, each action over what the one before it answered. An item
// an action skips or fails gets its outcome and is not applied.
func (p *pipeline) extend(ctx context.Context, bw *batchWork) error {
	if len(p.actions) == 0 || len(bw.items) == 0 {
		return nil
	}
	if bw.decided == nil {
		bw.decided = make([]bool, len(bw.items))
	}
	for _, a := range p.actions {
		if err := p.runAction(ctx, a, bw); err != nil {
			return err
		}
	}
	return nil
}

func (p *pipeline) runAction(ctx context.Context, a extcall.Action, bw *batchWork) error {
	raws := make([][]byte, len(bw.items))
	sizes := make([]int, len(bw.items))
	for i, it := range bw.items {
		if bw.decided[i] || !selects(a, it.Object) {
			continue
		}
		raw, err := json.Marshal(it.Object)
		if err != nil {
			return fmt.Errorf("encode %s: %w", p.gr, err)
		}
		raws[i], sizes[i] = raw, len(raw)
	}
	batches := extcall.Split(sizes, func(i int) bool { return raws[i] != nil })
	if len(batches) == 0 {
		return nil
	}
	answers := make([][]extension.RestoreItemAnswer, len(batches))
	failed := make([]string, len(batches))
	// The step's heartbeat names the extension while its calls run: one
	// nobody serves is seen waited on until its timeout.
	p.board.put(&batches, v1alpha1.ExtensionWait{Extension: a.Ext.Name, TaskQueue: a.Ext.TaskQueue, Since: metav1.NewTime(time.Now().UTC())})
	defer p.board.remove(&batches)
	stop := tick.Every(extcall.BeatEvery(ctx), p.beat)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxCallsInFlight)
	for k, batch := range batches {
		g.Go(func() error {
			req := extension.RestoreItemsRequest{Restore: p.restore, Backup: p.backup, Extension: a.Ext.Name,
				Resource: p.resource(), NamespaceMapping: p.namespaceMapping, DryRun: p.dryRun}
			var items extcall.Batch
			for _, i := range batch {
				req.Items = append(req.Items, raws[i])
				items = append(items, raws[i])
			}
			var err error
			answers[k], failed[k], err = extcall.Do[extension.RestoreItemAnswer](gctx, p.extensions, extcall.Request{Run: p.restore,
				Extension: a.Ext, Activity: extension.RestoreItemsV1, Scope: "restore/" + p.gr, Items: items, Payload: req})
			return err
		})
	}
	err := g.Wait()
	stop()
	if err != nil {
		return err
	}
	for k, batch := range batches {
		for j, i := range batch {
			if failed[k] != "" {
				p.decide(bw, i, v1alpha1.ItemFailed, fmt.Sprintf("extension %s: %s", a.Ext.Name, failed[k]))
				continue
			}
			p.answered(a, bw, i, raws[i], answers[k][j])
		}
	}
	return nil
}

// answered applies one answer to the item sent as raw.
func (p *pipeline) answered(a extcall.Action, bw *batchWork, i int, raw []byte, ans extension.RestoreItemAnswer) {
	who := "extension " + a.Ext.Name + ": "
	problem := extension.CheckRestoreAnswer(raw, ans)
	switch {
	case ans.Error != "":
		p.decide(bw, i, v1alpha1.ItemFailed, who+ans.Error)
		return
	case ans.Skip != "":
		p.decide(bw, i, v1alpha1.ItemSkipped, who+ans.Skip)
		return
	case problem != "":
		p.decide(bw, i, v1alpha1.ItemFailed, who+problem)
		return
	}
	if !extension.Unchanged(ans.Item) {
		var changed map[string]any
		if err := json.Unmarshal(ans.Item, &changed); err != nil || changed == nil {
			p.decide(bw, i, v1alpha1.ItemFailed, who+"its item is not a Kubernetes object")
			return
		}
		bw.items[i].Object = changed
	}
	if len(ans.AdditionalItems) > 0 {
		if bw.additional == nil {
			bw.additional = make([][]extension.ObjectRef, len(bw.items))
		}
		bw.additional[i] = append(bw.additional[i], ans.AdditionalItems...)
	}
	if w := ans.WaitFor; w != nil {
		timeout, _ := w.WaitTimeout() // checked with the answer
		if bw.waits == nil {
			bw.waits = make([][]*itemWait, len(bw.items))
		}
		bw.waits[i] = append(bw.waits[i], &itemWait{extension: a.Ext, refs: w.Items, timeout: timeout})
	}
	if ans.Operation != nil {
		if bw.operations == nil {
			bw.operations = make([][]extcall.OperationRecord, len(bw.items))
		}
		bw.operations[i] = append(bw.operations[i], extcall.OperationRecord{Extension: a.Ext.Name, ID: ans.Operation.ID,
			Resource: p.resource(), Item: p.itemRef(bw.items[i]), Data: ans.Operation.Data})
	}
}

func (p *pipeline) resource() extension.Resource {
	return extension.Resource{Group: p.typ.Group, Version: p.typ.Version, Resource: p.typ.Resource, Kind: p.typ.Kind}
}

// itemRef points at an item as it is restored.
func (p *pipeline) itemRef(it Item) extension.ObjectRef {
	ns, name := it.names()
	return extension.ObjectRef{Group: p.typ.Group, Resource: p.typ.Resource, Namespace: ns, Name: name}
}

// names are the item's namespace and name.
func (it Item) names() (namespace, name string) {
	meta, _ := it.Object["metadata"].(map[string]any)
	namespace, _ = meta["namespace"].(string)
	name, _ = meta["name"].(string)
	return namespace, name
}

// decide sets an item's outcome without applying it.
func (p *pipeline) decide(bw *batchWork, i int, result v1alpha1.ItemResult, reason string) {
	bw.outcomes[i] = p.outcome(bw.items[i], result, reason)
	bw.decided[i] = true
	bw.left.Add(-1)
}

// outcome is an item's outcome when it is not applied.
func (p *pipeline) outcome(it Item, result v1alpha1.ItemResult, reason string) v1alpha1.ItemOutcome {
	ns, name := it.names()
	return v1alpha1.ItemOutcome{Resource: p.gr, Namespace: ns, Name: name, Result: result, Reason: reason,
		SourceNamespace: it.SourceNamespace, Modifiers: it.Modifiers}
}
