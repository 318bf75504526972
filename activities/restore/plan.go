package restore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/activities/cluster"
	"github.com/cairn-backup/cairn/activities/internal/actas"
	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/backupmeta"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/objects"
	"github.com/cairn-backup/cairn/internal/resourcemodifiers"
	"github.com/cairn-backup/cairn/internal/runlog"
)

const (
	crdResource         = "customresourcedefinitions.apiextensions.k8s.io"
	claimsGroupResource = "persistentvolumeclaims"
)

// PlanRestore reads the backup, decides which types and items to restore
// and at which version the target cluster takes them, and writes the
// prepared items in batches. It is idempotent: a retry rewrites the same
// batches.
func (a *Activities) PlanRestore(ctx context.Context, in v1alpha1.RestorePlanInput) (*v1alpha1.RestorePlanResult, error) {
	spec, opts := in.Spec, in.Options.WithDefaults()
	run, err := runlog.StartRestore(ctx, a.Locations, a.Log, spec.Name, spec.BackupName, spec.StorageLocation)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer run.End()

	meta, tarKey, err := backupmeta.Read(ctx, run.Loc, spec.BackupName)
	switch {
	case errors.Is(err, location.ErrNotFound):
		msg := fmt.Sprintf("backup %q is not in %s", spec.BackupName, spec.StorageLocation)
		return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeBackupNotFound, err)
	case errors.Is(err, backupmeta.ErrCorrupt):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeCorruptBackup, err)
	case err != nil:
		return nil, fmt.Errorf("read backup %s: %w", spec.BackupName, err)
	}
	if p := meta.Status.Phase; p != v1alpha1.PhaseCompleted && p != v1alpha1.PhasePartiallyFailed {
		msg := fmt.Sprintf("backup %q is %s; only a Completed or PartiallyFailed backup can be restored", spec.BackupName, p)
		return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeBackupNotReady, nil)
	}
	backupLoc, err := sealedBackup(run.Loc, spec, meta)
	if err != nil {
		return nil, err
	}
	sel, err := newSelection(spec)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
	}
	clients, err := actas.Clients(a.Clients, opts.ActingAs)
	if err != nil {
		return nil, err
	}
	var target *targetAPI
	var reach cluster.Reachability
	err = reach.Do(ctx, opts.ClusterUnreachableTimeout.Duration, run.Log, func() { activity.RecordHeartbeat(ctx, reach) }, func() error {
		target, err = discoverTarget(clients.Discovery)
		return err
	})
	if err != nil {
		return nil, err
	}
	classes, err := a.storageClasses(ctx, spec)
	if err != nil {
		return nil, err
	}
	modifiers, err := a.resourceModifiers(ctx, clients, spec)
	if err != nil {
		return nil, err
	}
	src := tarballSource{loc: backupLoc, key: tarKey, limits: a.TarballLimits}
	var m *location.Manifest
	if meta.ManifestSHA256 != "" {
		m, err = run.Loc.ReadManifest(ctx, location.Backup(spec.BackupName), meta.ManifestSHA256)
		if err != nil {
			return nil, corruptOr(&corruptError{err})
		}
		want, ok := m.Objects[path.Base(tarKey)]
		if !ok {
			return nil, corruptOr(&corruptError{fmt.Errorf("the manifest has no %s", path.Base(tarKey))})
		}
		src.want = &want
	}
	idx, err := scanBackup(ctx, src, sel)
	if err != nil {
		return nil, corruptOr(err)
	}
	if err := mappingCollisions(spec, idx); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeInvalidSpec, err)
	}
	if idx.moved, idx.podCopies, idx.copiedClaims, err = movedVolumes(ctx, backupLoc, spec.BackupName, m); err != nil {
		return nil, err
	}
	if err := target.checkScopes(idx); err != nil {
		return nil, corruptOr(err)
	}
	p := decide(idx, target, sel)
	p.storageClasses, p.modifiers = classes, modifiers
	p.relatedByReference = meta.Spec.TakesRelatedByReference()
	p.restoreWait = a.RestoreWait
	vols, err := planVolumes(ctx, clients, run, spec, idx, p)
	if err != nil {
		return nil, err
	}
	if err := run.Loc.DeletePrefix(ctx, run.Restore.Batches(), runlog.Heartbeat(ctx)); err != nil {
		return nil, err
	}
	extensions, err := a.storeRestoreExtensions(ctx, run)
	if err != nil {
		return nil, err
	}
	w := newBatchWriter(run, opts.BatchSize)
	defer w.abort()
	if err := writeItems(ctx, src, idx, p, sel, w); err != nil {
		return nil, corruptOr(err)
	}
	if err := w.finish(ctx); err != nil {
		return nil, err
	}
	if len(p.podVolumeWarnings) > 0 {
		if err := run.Loc.WriteAll(ctx, run.Restore.Warnings("pod-volumes"), jsonLines(p.podVolumeWarnings)); err != nil {
			return nil, err
		}
	}

	res := &v1alpha1.RestorePlanResult{BackupFormat: meta.Format, Skipped: p.skipped, ItemsSkipped: w.ruleSkips, Volumes: vols,
		PodVolumes: p.podVolumes, Extensions: extensions}
	if len(classes) > 0 {
		res.StorageClasses = classes
	}
	var grs []string
	for gr := range w.counts {
		grs = append(grs, gr)
	}
	priorities := spec.ResourcePriorities
	if len(priorities) == 0 {
		priorities = v1alpha1.DefaultResourcePriorities
	}
	for _, gr := range objects.Order(grs, priorities) {
		t := p.types[gr]
		t.Items, t.Batches = w.counts[gr], w.batches[gr]
		res.Types = append(res.Types, t)
		res.ItemsTotal += t.Items
	}
	if extensions > 0 {
		// An extension may ask for an item of a later type to be
		// restored first: the apply steps find its batch here.
		if err := run.Loc.WriteJSON(ctx, run.Restore.PlannedTypes(), res.Types); err != nil {
			return nil, err
		}
	}
	run.Log.Info("Planned restore", zap.String("backupFormat", meta.Format), zap.Int("resourceTypes", len(res.Types)),
		zap.Int("items", res.ItemsTotal), zap.Int("itemsSkippedByRule", w.ruleSkips), zap.Int("typesSkipped", len(p.skipped)),
		zap.Int("volumesFromRepository", len(vols)), zap.Int("podVolumeCopies", len(p.podVolumes)))
	return res, nil
}

// sealedBackup is the location to read the backup's objects from. Where
// a key is configured, a backup cairn wrote with it has a manifest and
// every object encrypted; one that has not, or a plain object in it, is
// CorruptBackup unless the restore allows plaintext (a foreign backup).
func sealedBackup(loc *location.Location, spec v1alpha1.RestoreSpec, meta *v1alpha1.BackupMetadata) (*location.Location, error) {
	if loc.KeyID() == "" || spec.AllowPlaintext {
		return loc, nil
	}
	if meta.Format == v1alpha1.BackupFormatVelero || meta.ManifestSHA256 == "" {
		msg := fmt.Sprintf("backup %q was not written with this location's encryption key (it has no manifest); "+
			"restore it with allowPlaintext (--allow-plaintext) if it is a foreign backup, such as Velero's", spec.BackupName)
		return nil, temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeCorruptBackup, nil)
	}
	return loc.SealedOnly(), nil
}

// corruptOr turns a tarball that does not decode, or of an unknown
// format, into a non-retryable error; anything else is retried.
func corruptOr(err error) error {
	var ce *corruptError
	if errors.As(err, &ce) {
		return temporal.NewNonRetryableApplicationError("the backup's tarball is corrupt: "+ce.Error(), v1alpha1.ErrTypeCorruptBackup, err)
	}
	var ue *unsupportedError
	if errors.As(err, &ue) {
		return temporal.NewNonRetryableApplicationError(ue.Error(), v1alpha1.ErrTypeUnsupportedFormat, err)
	}
	return err
}

// restorePlan is what decide chose per backed-up type.
type restorePlan struct {
	types   map[string]v1alpha1.RestoreType
	skipped []v1alpha1.SkippedResource
	// crds are the CRD names (plural.group) restored in this run.
	crds map[string]bool
	// bareNamespaces: the filters leave the backup's Namespace objects
	// out; the namespaces items need are created bare.
	bareNamespaces bool
	// storageClasses maps backed-up storage classes to the cluster's.
	storageClasses map[string]string
	// modifiers change objects after they are prepared (nil: none).
	modifiers *resourcemodifiers.Rules
	// relatedByReference: the backup took its cluster-scoped objects for
	// what its namespaces need; they are created only where missing.
	relatedByReference bool
	// restoreWait is the init container of pods that get volume copies
	// back; writing the items lists those volumes in podVolumes.
	restoreWait       RestoreWait
	podVolumes        []v1alpha1.RestoreVolume
	podVolumeWarnings []string
}

// decide picks the types to restore and their versions.
func decide(idx *backupIndex, target *targetAPI, sel *selection) *restorePlan {
	p := &restorePlan{types: map[string]v1alpha1.RestoreType{}, crds: map[string]bool{}}
	skip := func(gr, reason string) {
		p.skipped = append(p.skipped, v1alpha1.SkippedResource{Resource: gr, Reason: reason})
	}

	grs := make([]string, 0, len(idx.types))
	for gr := range idx.types {
		grs = append(grs, gr)
	}
	sort.Strings(grs)
	// CRDs first: whether a custom type can be restored depends on them.
	if ti := idx.types[crdResource]; ti != nil && sel.resource(crdNames(ti)...) && sel.spec.ClusterResources != v1alpha1.ClusterResourcesExclude {
		for _, gr := range grs {
			if t := idx.types[gr]; t.selected > 0 && t.namespaced && idx.crds[gr] {
				p.crds[gr] = true // auto: the CRDs of restored custom resources
			}
		}
	}
	for _, gr := range grs {
		ti := idx.types[gr]
		names := typeNames(gr, ti)
		switch {
		case objects.NeverRestored[gr] != "":
			skip(gr, objects.NeverRestored[gr])
			continue
		case ti.selected == 0 || !sel.resource(names...):
			continue
		case !ti.namespaced && gr != "namespaces" && !sel.clusterType(gr):
			if sel.spec.ClusterScopedDenied != "" {
				skip(gr, sel.spec.ClusterScopedDenied)
			}
			continue
		}
		version, ok := target.chooseVersion(gr, ti)
		if !ok && p.crdRestored(gr, idx, sel) {
			version, ok = ti.sourceVersion(), true // served once its CRD is restored
		}
		if !ok {
			skip(gr, target.notServedReason(gr, ti))
			continue
		}
		g := schema.ParseGroupResource(gr)
		p.types[gr] = v1alpha1.RestoreType{
			ResourceType: v1alpha1.ResourceType{Group: g.Group, Version: version, Resource: g.Resource,
				Kind: ti.kind, Namespaced: ti.namespaced},
			RestoreStatus: sel.restoreStatus(names...),
		}
	}
	// Namespaces are created even when the backup has no Namespace objects.
	if _, ok := p.types["namespaces"]; !ok {
		p.bareNamespaces = true
		p.types["namespaces"] = v1alpha1.RestoreType{ResourceType: v1alpha1.ResourceType{Version: "v1", Resource: "namespaces", Kind: "Namespace"}}
	}
	return p
}

// crdRestored reports whether the CRD defining gr is restored in this run.
func (p *restorePlan) crdRestored(gr string, idx *backupIndex, sel *selection) bool {
	return p.crds[gr] || (sel.clusterType(crdResource) && sel.allCluster && idx.crds[gr])
}

// clusterType reports whether a cluster-scoped type is restored as a
// whole; in auto mode PersistentVolumes, CRDs, snapshot contents and the
// workloads' related objects are judged per item.
func (s *selection) clusterType(gr string) bool {
	switch s.spec.ClusterResources {
	case v1alpha1.ClusterResourcesExclude:
		return false
	case v1alpha1.ClusterResourcesInclude:
		return true
	}
	return s.allCluster || gr == "persistentvolumes" || gr == crdResource || gr == objects.VolumeSnapshotContentsResource || workloadDependency(gr)
}

func typeNames(gr string, ti *typeIndex) []string { return typeNamesOf(gr, ti.kind) }

// typeNamesOf are the names a user may spell type gr of kind with.
func typeNamesOf(gr, kind string) []string {
	g := schema.ParseGroupResource(gr)
	return []string{gr, g.Resource, strings.ToLower(kind)}
}

func crdNames(ti *typeIndex) []string { return typeNames(crdResource, ti) }

// mappingCollisions refuses a namespace mapping whose target is also a
// namespace restored under its own name: two backed-up namespaces would
// land in one, and their objects of the same name would overwrite each
// other's outcome.
func mappingCollisions(spec v1alpha1.RestoreSpec, idx *backupIndex) error {
	for _, from := range slices.Sorted(maps.Keys(spec.NamespaceMapping)) {
		to := spec.NamespaceMapping[from]
		if !idx.namespaces[from] || !idx.namespaces[to] {
			continue
		}
		if _, movedAway := spec.NamespaceMapping[to]; !movedAway {
			return fmt.Errorf("namespaceMapping %s:%s: the restore also restores namespace %q under its own name; map it too, or leave it out", from, to, to)
		}
	}
	return nil
}
