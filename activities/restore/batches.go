package restore

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strings"

	"go.temporal.io/sdk/activity"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/objects"
	"github.com/cairn-backup/cairn/internal/runlog"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// writeItems is the second pass over the tarball: every selected object of
// a chosen type, at the chosen version, prepared and written to a batch.
func writeItems(ctx context.Context, src tarballSource, idx *backupIndex, p *restorePlan,
	sel *selection, w *batchWriter) error {
	spec := sel.spec
	rules := objects.Index{
		Restored:        func(uid string) bool { return idx.restored(uid, p) },
		SelectorService: func(ns, name string) bool { return idx.selectorServices[ns+"/"+name] },
		WaitsForData:    func(ns, name string) bool { return len(podWithCopies(idx, ns, name)) > 0 },
	}
	prepare := objects.Options{
		Backup: spec.BackupName, Restore: spec.Name, MapNamespace: spec.MapNamespace, PreserveNodePorts: spec.PreserveNodePorts,
		StorageClasses: p.storageClasses,
		RestoredPV:     func(name string) bool { return pvRestored(name, idx, p, sel) },
		ClaimSnapshot: func(ns, name string) string {
			if _, moved := idx.moved[ns+"/"+name]; moved {
				return "" // the moved data is restored instead
			}
			vs := idx.claimSnapshots[ns+"/"+name]
			if vs == "" || !snapshotRestored(ns, vs, idx, p) {
				return ""
			}
			return vs
		},
	}
	n := 0
	// Each object is in the tarball at least twice: only the copy at the
	// version restored is read.
	want := func(e tarball.Entry) bool {
		if n++; n%2000 == 0 {
			activity.RecordHeartbeat(ctx, n)
		}
		t, ok := p.types[e.GroupResource]
		ti := idx.types[e.GroupResource]
		return ok && ti != nil && fromFolder(e, t.Version, ti) && (e.GroupResource != "namespaces" || !p.bareNamespaces)
	}
	prepareItem := func(e tarball.Entry) (preparedItem, error) {
		return prepareEntry(e, idx, p, sel, rules, prepare)
	}
	err := readTarball(ctx, src, func(r io.Reader) (string, error) {
		return tarball.WalkPrepared(r, src.limits, want, prepareWorkers, prepareItem, func(e tarball.Entry, it preparedItem) error {
			switch {
			case it.outcome != nil:
				return w.skip(ctx, *it.outcome)
			case it.line == nil:
				return nil // not selected
			}
			p.podVolumes = append(p.podVolumes, it.podVolumes...)
			p.addPodVolumeWarnings(it.warnings)
			return w.addLine(ctx, e.GroupResource, it.line, it.namespace, it.name)
		})
	})
	if err != nil {
		return err
	}
	return w.ensureNamespaces(ctx, spec)
}

// prepareWorkers prepare the second pass's items side by side, while the
// tarball is read and the batches are written: the plan is the worker's
// alone (the API server waits), so it gets every core.
var prepareWorkers = max(runtime.GOMAXPROCS(0), 2)

// preparedItem is what the second pass makes of one entry: a skipped or
// failed item's outcome, or the encoded Item for its batch (neither when
// the filters do not select it).
type preparedItem struct {
	outcome         *v1alpha1.ItemOutcome
	line            []byte
	namespace, name string
	podVolumes      []v1alpha1.RestoreVolume
	warnings        []string
}

// prepareEntry decodes and prepares one object. It runs on several
// goroutines at once: it reads idx, p and sel and changes none of them.
func prepareEntry(e tarball.Entry, idx *backupIndex, p *restorePlan, sel *selection, rules objects.Index,
	prepare objects.Options) (preparedItem, error) {
	spec := sel.spec
	t := p.types[e.GroupResource]
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(e.Data); err != nil {
		return preparedItem{}, &corruptError{fmt.Errorf("%s: %w", e.Path, err)}
	}
	if !sel.itemOrRelated(e.GroupResource, obj.GetNamespace(), obj.GetName(), obj.GetLabels()) ||
		!relatedClusterItem(e.GroupResource, obj, idx, p, sel) {
		return preparedItem{}, nil
	}
	outcome := v1alpha1.ItemOutcome{Resource: e.GroupResource, Namespace: spec.MapNamespace(obj.GetNamespace()), Name: obj.GetName()}
	if e.GroupResource == "namespaces" {
		outcome.Name = spec.MapNamespace(obj.GetName())
	}
	if outcome.Namespace != obj.GetNamespace() {
		outcome.SourceNamespace = obj.GetNamespace()
	}
	skipped := func(result v1alpha1.ItemResult, reason string) (preparedItem, error) {
		outcome.Result, outcome.Reason = result, reason
		return preparedItem{outcome: &outcome}, nil
	}
	reason := objects.SkipReason(e.GroupResource, obj, rules)
	if reason == "" && e.GroupResource == "persistentvolumes" {
		reason = cmp.Or(movedVolumeReplaces(obj.GetName(), idx), copiedVolumeReplaces(obj.GetName(), idx))
	}
	if reason == "" && e.GroupResource == "persistentvolumes" {
		reason = snapshotReplacesVolume(obj.GetName(), idx, p)
	}
	if reason != "" {
		return skipped(v1alpha1.ItemSkipped, reason)
	}
	var out preparedItem
	item := Item{SourceNamespace: outcome.SourceNamespace, CreateOnly: createOnly(e.GroupResource, p, sel)}
	if item.CreateOnly && e.GroupResource == objects.ClusterRoleBindingsResource {
		objects.KeepServiceAccountSubjects(obj, func(sa string) bool { return idx.serviceAccounts[sa] })
	}
	for _, ref := range obj.GetOwnerReferences() {
		if idx.restored(string(ref.UID), p) {
			item.RestoredOwners = append(item.RestoredOwners, string(ref.UID))
		}
	}
	sourceNS := obj.GetNamespace()
	opts := prepare
	opts.KeepStatus = t.RestoreStatus
	objects.Prepare(obj, opts)
	if e.GroupResource == "pods" {
		if problem := addInitHooks(obj, sourceNS, spec.Hooks); problem != "" {
			return skipped(v1alpha1.ItemSkipped, problem)
		}
		if copies := podWithCopies(idx, sourceNS, obj.GetName()); len(copies) > 0 {
			vols, warnings, err := addRestoreWait(obj, spec, sourceNS, copies, p.restoreWait)
			if err != nil {
				return skipped(v1alpha1.ItemFailed, err.Error())
			}
			out.podVolumes, out.warnings = vols, warnings
		}
	}
	applied, err := p.modifiers.Apply(obj, e.GroupResource)
	if err != nil {
		return skipped(v1alpha1.ItemFailed, err.Error())
	}
	item.Modifiers = applied
	item.Object = obj.Object
	if out.line, err = json.Marshal(item); err != nil {
		return preparedItem{}, fmt.Errorf("encode item: %w", err)
	}
	out.namespace, out.name = obj.GetNamespace(), obj.GetName()
	return out, nil
}

// fromFolder reports whether e is the copy of its object at version: the
// version-less copy when that is the source's version, else the copy in
// the version's folder.
func fromFolder(e tarball.Entry, version string, ti *typeIndex) bool {
	if version == ti.sourceVersion() {
		if ti.preferred != "" {
			return e.Preferred
		}
		return e.Version == ""
	}
	return !e.Preferred && e.Version == version
}

// relatedClusterItem applies the auto rule to cluster-scoped items: a
// PersistentVolume is restored with its claim, a CRD with its resources.
func relatedClusterItem(gr string, obj *unstructured.Unstructured, idx *backupIndex, p *restorePlan, sel *selection) bool {
	if obj.GetNamespace() != "" || sel.allCluster || sel.spec.ClusterResources == v1alpha1.ClusterResourcesInclude {
		return true
	}
	switch gr {
	case "persistentvolumes":
		ns, _, _ := unstructured.NestedString(obj.Object, "spec", "claimRef", "namespace")
		name, _, _ := unstructured.NestedString(obj.Object, "spec", "claimRef", "name")
		return idx.claims[ns+"/"+name]
	case crdResource:
		return p.crds[obj.GetName()]
	case objects.VolumeSnapshotContentsResource:
		ns, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeSnapshotRef", "namespace")
		name, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeSnapshotRef", "name")
		return idx.snapshots[ns+"/"+name]
	case objects.StorageClassesResource:
		_, mapped := p.storageClasses[obj.GetName()]
		return !mapped && idx.references[gr][obj.GetName()]
	}
	if workloadDependency(gr) {
		return idx.references[gr][obj.GetName()]
	}
	return true
}

// workloadDependency reports whether gr is one of the cluster-scoped
// types a namespace backup takes for its workloads.
func workloadDependency(gr string) bool { return slices.Contains(objects.WorkloadDependencies, gr) }

// createOnly reports whether an object of type gr is restored only where
// it is missing: a cluster-scoped object that a namespace backup took
// because its workloads need it, or that a namespace restore takes for
// them, is never changed (another namespace may rely on it as it is).
func createOnly(gr string, p *restorePlan, sel *selection) bool {
	return workloadDependency(gr) && (p.relatedByReference || sel.relatedByReference())
}

// snapshotRestored reports whether the VolumeSnapshot ns/name of the
// backup is restored in this run (selected, and its types planned).
func snapshotRestored(ns, name string, idx *backupIndex, p *restorePlan) bool {
	_, vsPlanned := p.types[objects.VolumeSnapshotsResource]
	_, contentPlanned := p.types[objects.VolumeSnapshotContentsResource]
	return vsPlanned && contentPlanned && idx.snapshots[ns+"/"+name]
}

// snapshotReplacesVolume is why a PersistentVolume is not restored: its
// claim is restored from the backup's snapshot into a new volume.
func snapshotReplacesVolume(pv string, idx *backupIndex, p *restorePlan) string {
	claim := idx.volumeClaims[pv]
	ns, _, _ := strings.Cut(claim, "/")
	vs := idx.claimSnapshots[claim]
	if vs == "" || !snapshotRestored(ns, vs, idx, p) {
		return ""
	}
	return "its claim " + claim + " is restored from VolumeSnapshot " + vs + " into a new volume"
}

// pvRestored reports whether a PersistentVolume is restored, whether or
// not the second pass has reached it yet.
func pvRestored(name string, idx *backupIndex, p *restorePlan, sel *selection) bool {
	claim, inBackup := idx.volumeClaims[name]
	if _, planned := p.types["persistentvolumes"]; !planned || !inBackup || movedVolumeReplaces(name, idx) != "" ||
		copiedVolumeReplaces(name, idx) != "" {
		return false
	}
	return sel.allCluster || sel.spec.ClusterResources == v1alpha1.ClusterResourcesInclude || idx.claims[claim]
}

// batchWriter fills batches of prepared items per type and stores each
// when full.
type batchWriter struct {
	run      *runlog.Run
	size     int
	pending  map[string]*bytes.Buffer
	pendingN map[string]int
	counts   map[string]int
	batches  map[string]int
	// skips streams the outcomes of the items left out by rule into the
	// location as they come: a big cluster's pods, all owned by
	// controllers, are hundreds of thousands of them.
	skips     *location.Writer
	skipsBuf  *bufio.Writer
	ruleSkips int
	// last is the type of the item added last: the tarball holds a type's
	// items together, so its partly filled batch is stored, and its
	// buffer let go, as soon as the next type begins.
	last string
	// namespaces are the target namespaces items land in, and whether a
	// Namespace object for each was written.
	namespaces map[string]bool
}

func newBatchWriter(run *runlog.Run, size int) *batchWriter {
	return &batchWriter{run: run, size: size, pending: map[string]*bytes.Buffer{}, pendingN: map[string]int{},
		counts: map[string]int{}, batches: map[string]int{}, namespaces: map[string]bool{}}
}

func (w *batchWriter) add(ctx context.Context, gr string, item Item) error {
	line, err := json.Marshal(item)
	if err != nil {
		return fmt.Errorf("encode item: %w", err)
	}
	obj := unstructured.Unstructured{Object: item.Object}
	return w.addLine(ctx, gr, line, obj.GetNamespace(), obj.GetName())
}

// addLine adds an encoded Item of the object namespace/name (as restored).
func (w *batchWriter) addLine(ctx context.Context, gr string, line []byte, namespace, name string) error {
	if namespace != "" {
		if _, ok := w.namespaces[namespace]; !ok {
			w.namespaces[namespace] = false
		}
	} else if gr == "namespaces" {
		w.namespaces[name] = true
	}
	if gr != w.last {
		if err := w.flush(ctx, w.last); err != nil {
			return err
		}
		delete(w.pending, w.last)
		w.last = gr
	}
	buf := w.pending[gr]
	if buf == nil {
		buf = &bytes.Buffer{}
		w.pending[gr] = buf
	}
	buf.Write(line)
	buf.WriteByte('\n')
	w.pendingN[gr]++
	w.counts[gr]++
	if w.pendingN[gr] >= w.size {
		return w.flush(ctx, gr)
	}
	return nil
}

func (w *batchWriter) flush(ctx context.Context, gr string) error {
	buf := w.pending[gr]
	if buf == nil || buf.Len() == 0 {
		return nil
	}
	if err := w.run.Loc.WriteAll(ctx, w.run.Restore.Batch(gr, w.batches[gr]), buf.Bytes()); err != nil {
		return err
	}
	w.batches[gr]++
	buf.Reset()
	w.pendingN[gr] = 0
	return nil
}

func (w *batchWriter) skip(ctx context.Context, o v1alpha1.ItemOutcome) error {
	line, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if w.skips == nil {
		if w.skips, err = w.run.Loc.NewWriter(ctx, w.run.Restore.PlanSkips()); err != nil {
			return err
		}
		w.skipsBuf = bufio.NewWriterSize(w.skips, 1<<16)
	}
	if _, err := w.skipsBuf.Write(line); err != nil {
		return fmt.Errorf("store the items skipped by rule: %w", err)
	}
	if err := w.skipsBuf.WriteByte('\n'); err != nil {
		return fmt.Errorf("store the items skipped by rule: %w", err)
	}
	w.ruleSkips++
	return nil
}

// abort discards the skips of a plan that did not finish.
func (w *batchWriter) abort() {
	if w.skips != nil {
		w.skips.Abort()
		w.skips = nil
	}
}

// ensureNamespaces adds the namespaces items land in that the backup
// holds no Namespace object for.
func (w *batchWriter) ensureNamespaces(ctx context.Context, spec v1alpha1.RestoreSpec) error {
	for _, ns := range slices.Sorted(maps.Keys(w.namespaces)) {
		if w.namespaces[ns] {
			continue
		}
		obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{
			"name": ns, "labels": map[string]any{v1alpha1.LabelBackup: spec.BackupName, v1alpha1.LabelRestore: spec.Name}}}
		if err := w.add(ctx, "namespaces", Item{Object: obj, EnsureOnly: true}); err != nil {
			return err
		}
	}
	return nil
}

// finish stores the partly filled batches and the rule skips; with no
// skip, an empty object replaces what an earlier attempt stored.
func (w *batchWriter) finish(ctx context.Context) error {
	for _, gr := range slices.Sorted(maps.Keys(w.pending)) {
		if err := w.flush(ctx, gr); err != nil {
			return err
		}
	}
	if w.skips == nil {
		return w.run.Loc.WriteAll(ctx, w.run.Restore.PlanSkips(), nil)
	}
	skips := w.skips
	w.skips = nil
	if err := w.skipsBuf.Flush(); err != nil {
		skips.Abort()
		return fmt.Errorf("store the items skipped by rule: %w", err)
	}
	return skips.Close()
}
