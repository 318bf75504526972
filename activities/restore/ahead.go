package restore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/extcall"
	"github.com/cairn-backup/cairn/internal/kube"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/pkg/extension"
)

// Additional items: an extension's restore answer may name objects to
// restore before its item (Velero's additional items). The plan prepared
// every item in its type's batches. One of a type applied later, or of a
// later batch of the item's own type, is found there, sent to its type's
// extensions and created at once; its outcome is recorded for its type's
// step, which takes that outcome instead of applying it again, so it is
// counted once and its extensions see it once. One of a type applied
// earlier, or of an earlier batch, only has to exist.
//
// It happens while a batch is loaded, before any of its items is
// applied, one additional item after another: such items are few, and a
// batch loaded later then always finds the records of those restored
// ahead of it.

// maxAheadDepth bounds how deep additional items of additional items go.
const maxAheadDepth = 4

// aheadRecord is what restoring one item ahead of its type came to, as
// its type's step takes it.
type aheadRecord struct {
	// Key names the item as the plan prepared it, namespace/name: an
	// extension may have renamed what it restored.
	Key        string                    `json:"key"`
	Outcome    v1alpha1.ItemOutcome      `json:"outcome"`
	Relinks    []relink                  `json:"relinks,omitempty"`
	Operations []extcall.OperationRecord `json:"operations,omitempty"`
}

// applyPlan is what one apply attempt knows of the restore's plan: its
// extensions, read once, and the other types, read when an extension
// first asks for an additional item.
type applyPlan struct {
	a       *Activities
	run     *runlog.Run
	in      v1alpha1.ApplyInput
	clients *kube.Clients
	owners  *ownerResolver
	// exts are the extensions the plan kept; without them no item is
	// restored ahead, and no type looks for records.
	exts []v1alpha1.Extension

	mu      sync.Mutex
	types   []v1alpha1.RestoreType // the plan's, in order; nil until read
	index   map[string]map[string]int
	records map[string]map[string]aheadRecord
}

func newApplyPlan(ctx context.Context, a *Activities, run *runlog.Run, in v1alpha1.ApplyInput, clients *kube.Clients,
	owners *ownerResolver) (*applyPlan, error) {
	exts, err := plannedExtensions(ctx, run)
	if err != nil {
		return nil, err
	}
	return &applyPlan{a: a, run: run, in: in, clients: clients, owners: owners, exts: exts,
		index: map[string]map[string]int{}, records: map[string]map[string]aheadRecord{}}, nil
}

// applier creates the items of type t as the attempt's identity.
func (h *applyPlan) applier(t v1alpha1.RestoreType) *applier {
	ap := newApplier(h.clients, h.in, t, h.owners)
	ap.namespaceExists = h.a.namespaceExists
	return ap
}

func itemKey(namespace, name string) string { return namespace + "/" + name }

// recordsOf are the items of type gr restored ahead of it, by key.
func (h *applyPlan) recordsOf(ctx context.Context, gr string) (map[string]aheadRecord, error) {
	if h == nil || len(h.exts) == 0 {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if recs, ok := h.records[gr]; ok {
		return recs, nil
	}
	keys, err := h.run.Loc.Keys(ctx, h.run.Restore.AheadOf(gr))
	if err != nil {
		return nil, fmt.Errorf("list the %s restored ahead: %w", gr, err)
	}
	recs := map[string]aheadRecord{}
	for _, k := range keys {
		var rec aheadRecord
		if err := h.run.Loc.ReadJSON(ctx, k, &rec); err != nil {
			return nil, fmt.Errorf("read %s: %w", k, err)
		}
		recs[rec.Key] = rec
	}
	h.records[gr] = recs
	return recs, nil
}

// record stores what restoring an item ahead came to, before the item
// that asked for it goes on: a retried step finds it and does not
// restore it again.
func (h *applyPlan) record(ctx context.Context, gr, key string, rec aheadRecord) error {
	rec.Key = key
	sum := sha256.Sum256([]byte(key))
	if err := h.run.Loc.WriteJSON(ctx, h.run.Restore.Ahead(gr, hex.EncodeToString(sum[:12])), rec); err != nil {
		return fmt.Errorf("record %s %s restored ahead: %w", gr, key, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.records[gr] == nil {
		h.records[gr] = map[string]aheadRecord{}
	}
	h.records[gr][key] = rec
	return nil
}

// aheadPlace is where an item is among the plan's: its type's position
// in the restore order, the type, and the batch that holds it.
type aheadPlace struct {
	pos   int
	t     v1alpha1.RestoreType
	batch int
}

// locate finds an item of type gr among the plan's, and the position of
// type current; found is false when the restore does not hold the item.
func (h *applyPlan) locate(ctx context.Context, current, gr, key string, beat func()) (at aheadPlace, cur int, found bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.types == nil {
		err := h.run.Loc.ReadJSON(ctx, h.run.Restore.PlannedTypes(), &h.types)
		switch {
		case errors.Is(err, location.ErrNotFound):
			// Planned by a cairn before additional items: it holds
			// none to restore ahead.
			h.types = []v1alpha1.RestoreType{}
		case err != nil:
			return at, 0, false, fmt.Errorf("read the restore's planned types: %w", err)
		}
	}
	position := func(gr string) int {
		return slices.IndexFunc(h.types, func(t v1alpha1.RestoreType) bool { return t.GroupResource() == gr })
	}
	cur, at.pos = position(current), position(gr)
	if at.pos < 0 {
		return at, cur, false, nil
	}
	at.t = h.types[at.pos]
	idx, ok := h.index[gr]
	if !ok {
		// Built once per type and attempt, and only for the types
		// additional items name: the keys of their items.
		idx = map[string]int{}
		for b := range at.t.Batches {
			err := h.run.Loc.ReadLines(ctx, h.run.Restore.Batch(gr, b), func(line []byte) error {
				var it itemName
				if err := json.Unmarshal(line, &it); err != nil {
					return fmt.Errorf("decode item: %w", err)
				}
				idx[itemKey(it.Object.Metadata.Namespace, it.Object.Metadata.Name)] = b
				return nil
			})
			if err != nil {
				return at, cur, false, fmt.Errorf("read batch %d of %s: %w", b, gr, err)
			}
			beat()
		}
		h.index[gr] = idx
	}
	at.batch, found = idx[key]
	return at, cur, found, nil
}

// itemName is what locate reads of a prepared item.
type itemName struct {
	Object struct {
		Metadata struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	} `json:"object"`
}

// readItem reads one prepared item from its batch.
func (h *applyPlan) readItem(ctx context.Context, gr string, batch int, key string) (Item, error) {
	var found *Item
	err := h.run.Loc.ReadLines(ctx, h.run.Restore.Batch(gr, batch), func(line []byte) error {
		if found != nil {
			return nil
		}
		var it Item
		if err := json.Unmarshal(line, &it); err != nil {
			return fmt.Errorf("decode item: %w", err)
		}
		if ns, name := it.names(); itemKey(ns, name) == key {
			found = &it
		}
		return nil
	})
	switch {
	case err != nil:
		return Item{}, fmt.Errorf("read batch %d of %s: %w", batch, gr, err)
	case found == nil:
		return Item{}, fmt.Errorf("%s %s is not in batch %d any more", gr, key, batch)
	}
	return *found, nil
}

// takeRestoredAhead gives the items of a batch that were restored ahead
// the outcome recorded then: they are neither sent to extensions nor
// applied again.
func (p *pipeline) takeRestoredAhead(ctx context.Context, bw *batchWork) error {
	recs, err := p.plan.recordsOf(ctx, p.gr)
	if err != nil || len(recs) == 0 {
		return err
	}
	for i, it := range bw.items {
		rec, ok := recs[itemKey(it.names())]
		if !ok {
			continue
		}
		if bw.decided == nil {
			bw.decided = make([]bool, len(bw.items))
		}
		bw.outcomes[i], bw.relinks[i], bw.decided[i] = rec.Outcome, rec.Relinks, true
		if len(rec.Operations) > 0 {
			if bw.operations == nil {
				bw.operations = make([][]extcall.OperationRecord, len(bw.items))
			}
			bw.operations[i] = rec.Operations
		}
		bw.left.Add(-1)
	}
	return nil
}

// restoreFirst restores the additional items the extensions asked for
// before the batch's items, and fails each item one of them is not there
// for. A dry run restores nothing ahead.
func (p *pipeline) restoreFirst(ctx context.Context, bw *batchWork) error {
	if bw.additional == nil || p.dryRun {
		return nil
	}
	for i, refs := range bw.additional {
		if len(refs) == 0 || bw.decided[i] {
			continue
		}
		why, err := p.ensureAll(ctx, bw, refs, []string{p.gr + " " + itemKey(bw.items[i].names())})
		if err != nil {
			return err
		}
		if why != "" {
			p.decide(bw, i, v1alpha1.ItemFailed, why)
		}
	}
	return nil
}

// ensureAll makes sure each ref is there, in order; chain names the
// items that asked, the first one first. It says why one is not.
func (p *pipeline) ensureAll(ctx context.Context, bw *batchWork, refs []extension.ObjectRef, chain []string) (string, error) {
	for _, ref := range refs {
		why, err := p.ensure(ctx, bw, ref, chain)
		if why != "" || err != nil {
			return why, err
		}
	}
	return "", nil
}

// ensure restores one additional item unless it is there already.
func (p *pipeline) ensure(ctx context.Context, bw *batchWork, ref extension.ObjectRef, chain []string) (string, error) {
	gr, key := extcall.GroupResource(ref), itemKey(ref.Namespace, ref.Name)
	name := "additional item " + extcall.RefString(ref)
	switch {
	case slices.Contains(chain, gr+" "+key):
		return name + " is among the items that asked for it: " + strings.Join(append(chain, gr+" "+key), " → "), nil
	case len(chain) > maxAheadDepth:
		return fmt.Sprintf("%s: additional items nest deeper than %d", name, maxAheadDepth), nil
	}
	at, cur, found, err := p.plan.locate(ctx, p.gr, gr, key, p.beat)
	if err != nil {
		return "", err
	}
	var outcome *v1alpha1.ItemOutcome
	switch {
	case !found:
		// Not the restore's to create: it must be there.
	case gr == claimsGroupResource && at.pos > cur:
		return name + ": claims are restored in their own step, after their volumes' data, and cannot be restored ahead of it", nil
	case at.pos < cur || (at.pos == cur && at.batch < bw.index):
		// Its type's step, or its batch, came first.
		if at.pos == cur {
			p.awaitBatch(ctx, at.batch)
		}
	case at.pos == cur && at.batch == bw.index:
		j := slices.IndexFunc(bw.items, func(it Item) bool { return itemKey(it.names()) == key })
		if j < 0 {
			return "", fmt.Errorf("%s %s is not in batch %d any more", gr, key, at.batch)
		}
		o, _, err := p.applyAhead(ctx, p, bw, bw, j, chain)
		if err != nil {
			return "", err
		}
		outcome = &o
	default:
		if outcome, err = p.restoreAhead(ctx, bw, at.t, at.batch, key, chain); err != nil {
			return "", err
		}
	}
	if outcome != nil && outcome.Result == v1alpha1.ItemRestored {
		return "", nil
	}
	exists, unreadable, err := p.ready.exists(ctx, ref)
	switch {
	case err != nil || exists:
		return "", err
	case unreadable != "":
		return name + ": " + unreadable, nil
	case outcome != nil:
		return fmt.Sprintf("%s was not restored: %s", name, outcome.Reason), nil
	case !found:
		return name + " is not in this restore (not in the backup, or left out by its filters) and does not exist", nil
	}
	return name + " was not restored (results.json says why)", nil
}

// awaitBatch waits until batch b of the pipeline's type, handed out
// before the one being loaded, has every item's outcome.
func (p *pipeline) awaitBatch(ctx context.Context, b int) {
	complete := p.inFlight[b]
	if complete == nil {
		return // stored before this attempt began
	}
	select {
	case <-complete:
	case <-ctx.Done():
	}
}

// applyAhead creates item j of work, of p's type, before its turn: once
// the additional items it names are there, judged from the batch being
// loaded (bw, by the pipeline loading it, loader), and what it waits for
// is ready. An item its extensions decided on keeps that outcome.
func (p *pipeline) applyAhead(ctx context.Context, loader *pipeline, bw, work *batchWork, j int,
	chain []string) (v1alpha1.ItemOutcome, []relink, error) {
	if work.decided[j] {
		return work.outcomes[j], nil, nil
	}
	it := work.items[j]
	if refs := work.additionalOf(j); len(refs) > 0 {
		why, err := loader.ensureAll(ctx, bw, refs, append(chain, p.gr+" "+itemKey(it.names())))
		if err != nil || why != "" {
			return p.outcome(it, v1alpha1.ItemFailed, why), nil, err
		}
	}
	if why, err := p.awaitReady(ctx, work, j); err != nil || why != "" {
		return p.outcome(it, v1alpha1.ItemFailed, why), nil, err
	}
	return p.ap.apply(ctx, it)
}

// restoreAhead restores one item of a later type or batch now, with its
// type's rules and extensions, and records what came of it.
// Its own additional items are judged from the batch being loaded, bw.
func (p *pipeline) restoreAhead(ctx context.Context, bw *batchWork, t v1alpha1.RestoreType, batch int, key string,
	chain []string) (*v1alpha1.ItemOutcome, error) {
	gr := t.GroupResource()
	recs, err := p.plan.recordsOf(ctx, gr)
	if err != nil {
		return nil, err
	}
	if rec, ok := recs[key]; ok {
		return &rec.Outcome, nil // an earlier attempt restored it
	}
	it, err := p.plan.readItem(ctx, gr, batch, key)
	if err != nil {
		return nil, err
	}
	sub, err := p.forType(t)
	if err != nil {
		return nil, err
	}
	one := &batchWork{index: batch, items: []Item{it}, outcomes: make([]v1alpha1.ItemOutcome, 1), relinks: make([][]relink, 1),
		decided: make([]bool, 1)}
	one.left.Store(1)
	if err := sub.extend(ctx, one); err != nil {
		return nil, err
	}
	outcome, relinks, err := sub.applyAhead(ctx, p, bw, one, 0, chain)
	if err != nil {
		return nil, err
	}
	rec := aheadRecord{Outcome: outcome, Relinks: relinks}
	if rec.Outcome.Result == v1alpha1.ItemRestored && one.operations != nil {
		rec.Operations = one.operations[0]
	}
	if err := p.plan.record(ctx, gr, key, rec); err != nil {
		return nil, err
	}
	p.run.Log.Info("Restored ahead of its type", zap.String("resource", gr), zap.String("item", key),
		zap.String("result", string(rec.Outcome.Result)), zap.String("for", chain[0]))
	return &rec.Outcome, nil
}

// forType is a pipeline for another type's items, sharing this one's
// heartbeat and waits.
func (p *pipeline) forType(t v1alpha1.RestoreType) (*pipeline, error) {
	gr := t.GroupResource()
	actions, err := p.plan.actions(gr)
	if err != nil {
		return nil, err
	}
	return &pipeline{run: p.run, ap: p.plan.applier(t), gr: gr, batches: t.Batches, actions: actions, extensions: p.extensions, beat: p.beat,
		restore: p.restore, backup: p.backup, typ: t.ResourceType, namespaceMapping: p.namespaceMapping, dryRun: p.dryRun,
		board: p.board, ready: p.ready, plan: p.plan}, nil
}

// additionalOf are the additional items the extensions named for item i.
func (bw *batchWork) additionalOf(i int) []extension.ObjectRef {
	if bw.additional == nil {
		return nil
	}
	return bw.additional[i]
}
