package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tidwall/gjson"
	"go.temporal.io/sdk/activity"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/objects"
	"github.com/cairn-backup/cairn/internal/tarball"
)

// backupIndex is what a first pass over the tarball learns: which version
// folders each type has, and the identities the item rules need. It holds
// a few bytes per object, never an object.
type backupIndex struct {
	types map[string]*typeIndex
	// selected maps the UIDs of objects the filters select to their type.
	selected *uidTypes
	// selectorServices are "ns/name" of Services with a pod selector.
	selectorServices map[string]bool
	// claims are "ns/name" of selected PersistentVolumeClaims.
	claims map[string]bool
	// crds are the names (plural.group) of the CRDs the backup holds.
	crds map[string]bool
	// volumeClaims maps PersistentVolume names to their claim's "ns/name".
	volumeClaims map[string]string
	// namespaces are the backed-up namespaces that have selected items.
	namespaces map[string]bool
	// claimSnapshots maps "ns/claim" to the ready VolumeSnapshot of the
	// claim that a backup took, which the claim is restored from.
	claimSnapshots map[string]string
	// snapshots are "ns/name" of selected VolumeSnapshots.
	snapshots map[string]bool
	// claimShapes are what a new volume needs to fit each selected claim.
	claimShapes map[string]claimShape
	// moved are the claims ("ns/claim") whose data the backup moved into
	// the repository, from volumes.json.
	moved map[string]v1alpha1.VolumeRecord
	// podCopies are the pod volumes the backup copied from their pods,
	// by pod ("ns/name" as backed up).
	podCopies map[string][]v1alpha1.VolumeRecord
	// copiedClaims are the claims ("ns/claim") among the copied volumes.
	copiedClaims map[string]bool
	// references are the cluster-scoped objects (by group-resource, then
	// name) that selected namespaced objects name, and the
	// ClusterRoleBindings of their namespaces' service accounts with the
	// ClusterRoles those bind (see resolveBindings).
	references map[string]map[string]bool
	// bindings are the backup's ClusterRoleBindings that name a service
	// account: those accounts and the ClusterRole bound.
	bindings map[string]clusterBinding
	// serviceAccounts are the restored service accounts, "ns/name".
	serviceAccounts map[string]bool
}

// clusterBinding is what the auto rule needs of a ClusterRoleBinding.
type clusterBinding struct {
	role     string
	accounts []string
}

func (idx *backupIndex) reference(gr, name string) {
	if idx.references[gr] == nil {
		idx.references[gr] = map[string]bool{}
	}
	idx.references[gr][name] = true
}

// resolveBindings adds to the references the ClusterRoleBindings naming a
// restored service account, and their roles.
func (idx *backupIndex) resolveBindings() {
	for name, b := range idx.bindings {
		if slices.ContainsFunc(b.accounts, func(sa string) bool { return idx.serviceAccounts[sa] }) {
			idx.reference(objects.ClusterRoleBindingsResource, name)
			if b.role != "" {
				idx.reference(objects.ClusterRolesResource, b.role)
			}
		}
	}
}

// typeIndex describes one group-resource of the backup.
type typeIndex struct {
	kind       string
	namespaced bool
	scopeKnown bool
	// preferred is the source cluster's preferred version; "" when the
	// backup has no -preferredversion folder (only version-less copies).
	preferred string
	// plainVersion is the apiVersion's version of the version-less copies.
	plainVersion string
	// versions are the versions the backup holds the type at.
	versions map[string]bool
	// selected counts the objects the filters select.
	selected int
}

// restored reports whether the object with this UID is restored in the
// plan p: selected, and of a type the plan restores.
func (idx *backupIndex) restored(uid string, p *restorePlan) bool {
	gr, ok := idx.selected.get(uid)
	if !ok {
		return false
	}
	_, planned := p.types[gr]
	return planned
}

// sourceVersion is the version the version-less copies are at.
func (t *typeIndex) sourceVersion() string {
	if t.preferred != "" {
		return t.preferred
	}
	return t.plainVersion
}

// scanBackup reads the tarball once without keeping objects. Reading
// each object's fields runs beside the reading of the stream; indexing
// them, in the tarball's order.
func scanBackup(ctx context.Context, src tarballSource, sel *selection) (*backupIndex, error) {
	idx := &backupIndex{types: map[string]*typeIndex{}, selected: newUIDTypes(),
		selectorServices: map[string]bool{}, claims: map[string]bool{}, crds: map[string]bool{}, volumeClaims: map[string]string{}, namespaces: map[string]bool{},
		claimSnapshots: map[string]string{}, snapshots: map[string]bool{}, claimShapes: map[string]claimShape{},
		references: map[string]map[string]bool{}, bindings: map[string]clusterBinding{}, serviceAccounts: map[string]bool{}}
	n := 0
	read := func(e tarball.Entry) (scannedEntry, error) { return scanEntry(e, sel) }
	err := readTarball(ctx, src, func(r io.Reader) (string, error) {
		return tarball.WalkPrepared(r, src.limits, nil, prepareWorkers, read, func(e tarball.Entry, s scannedEntry) error {
			if n++; n%2000 == 0 {
				activity.RecordHeartbeat(ctx, n)
			}
			return idx.add(e, s)
		})
	})
	idx.resolveBindings()
	return idx, err
}

// scannedEntry is what the first pass reads of one object.
type scannedEntry struct {
	apiVersion, kind, uid string
	// selected: the filters select the object (or its type's related
	// objects); the fields below are read only then.
	selected bool
	// typeSelected: the resource filters select the object's type.
	typeSelected bool
	// references are what a namespaced object of a selected type names.
	references      []objects.Reference
	binding         *clusterBinding
	selectorService bool
	claimShape      claimShape
	// volumeClaim is a PersistentVolume's claim, "ns/name".
	volumeClaim string
	// snapshotOf is the claim of a VolumeSnapshot a backup took and that
	// is ready to restore it from.
	snapshotOf string
}

// scanEntry reads what the index needs of one object. It runs on several
// goroutines at once and changes nothing.
func scanEntry(e tarball.Entry, sel *selection) (scannedEntry, error) {
	head := gjson.GetManyBytes(e.Data, "apiVersion", "kind", "metadata.uid", "metadata.labels", "metadata.namespace")
	if ns := head[4].String(); ns != e.Namespace {
		// Where an object is created follows its path; one whose own
		// namespace says otherwise was not written by a backup.
		return scannedEntry{}, &corruptError{fmt.Errorf("%s %s: its metadata.namespace %q differs from its path's %q", e.GroupResource, e.Name, ns, e.Namespace)}
	}
	s := scannedEntry{apiVersion: head[0].String(), kind: head[1].String(), uid: head[2].String()}
	if e.Version != "" && !e.Preferred {
		return s, nil // the same objects at another version
	}
	labels := map[string]string{}
	head[3].ForEach(func(k, v gjson.Result) bool { labels[k.String()] = v.String(); return true })
	if s.selected = sel.itemOrRelated(e.GroupResource, e.Namespace, e.Name, labels); !s.selected {
		return s, nil
	}
	s.typeSelected = sel.resource(typeNamesOf(e.GroupResource, s.kind)...)
	if e.Namespace != "" && s.typeSelected {
		s.references = objects.References(e.GroupResource, e.Data)
	}
	switch e.GroupResource {
	case objects.ClusterRoleBindingsResource:
		if accounts := objects.ServiceAccountSubjects(e.Data); len(accounts) > 0 {
			s.binding = &clusterBinding{role: objects.BoundClusterRole(e.Data), accounts: accounts}
		}
	case "services":
		s.selectorService = gjson.GetBytes(e.Data, "spec.selector").IsObject()
	case claimsGroupResource:
		s.claimShape = readClaimShape(e.Data)
	case "persistentvolumes":
		claim := gjson.GetManyBytes(e.Data, "spec.claimRef.namespace", "spec.claimRef.name")
		s.volumeClaim = claim[0].String() + "/" + claim[1].String()
	case objects.VolumeSnapshotsResource:
		snap := gjson.GetManyBytes(e.Data, "spec.source.persistentVolumeClaimName", "status.readyToUse", "status.boundVolumeSnapshotContentName")
		if labels[v1alpha1.LabelBackup] != "" && snap[0].String() != "" && snap[1].Bool() && snap[2].String() != "" {
			s.snapshotOf = snap[0].String()
		}
	}
	return s, nil
}

// add indexes one object, read by scanEntry, in the tarball's order.
func (idx *backupIndex) add(e tarball.Entry, s scannedEntry) error {
	t := idx.types[e.GroupResource]
	if t == nil {
		t = &typeIndex{versions: map[string]bool{}}
		idx.types[e.GroupResource] = t
	}
	if t.scopeKnown && t.namespaced != (e.Namespace != "") {
		return &corruptError{fmt.Errorf("%s is stored both in namespaces and cluster-wide", e.GroupResource)}
	}
	t.scopeKnown, t.namespaced = true, e.Namespace != ""
	switch {
	case e.Preferred:
		t.preferred = e.Version
		t.versions[e.Version] = true
	case e.Version != "":
		t.versions[e.Version] = true
		return nil // the same objects at another version
	default:
		t.plainVersion = schema.FromAPIVersionAndKind(s.apiVersion, "").Version
		t.versions[t.plainVersion] = true
	}
	t.kind = s.kind
	if e.GroupResource == crdResource {
		idx.crds[e.Name] = true
	}
	if !s.selected {
		return nil
	}
	if e.Namespace != "" {
		idx.namespaces[e.Namespace] = true
	}
	if s.uid != "" && idx.selected.add(s.uid, e.GroupResource) {
		t.selected++
	}
	key := e.Namespace + "/" + e.Name
	if e.Namespace != "" && s.typeSelected {
		for _, ref := range s.references {
			idx.reference(ref.Resource, ref.Name)
		}
		if e.GroupResource == "serviceaccounts" {
			idx.serviceAccounts[key] = true
		}
	}
	switch e.GroupResource {
	case objects.ClusterRoleBindingsResource:
		if s.binding != nil {
			idx.bindings[e.Name] = *s.binding
		}
	case "services":
		if s.selectorService {
			idx.selectorServices[key] = true
		}
	case claimsGroupResource:
		idx.claims[key] = true
		idx.claimShapes[key] = s.claimShape
	case "persistentvolumes":
		idx.volumeClaims[e.Name] = s.volumeClaim
	case objects.VolumeSnapshotsResource:
		idx.snapshots[key] = true
		if s.snapshotOf != "" {
			idx.claimSnapshots[e.Namespace+"/"+s.snapshotOf] = e.Name
		}
	}
	return nil
}

// corruptError is a tarball that cannot be read whatever the retry.
type corruptError struct{ err error }

func (e *corruptError) Error() string { return e.err.Error() }
func (e *corruptError) Unwrap() error { return e.err }

// unsupportedError is a tarball of a format version this cairn does not
// know: reading it anyway could restore nothing and call that a success.
type unsupportedError struct{ format, key string }

func (e *unsupportedError) Error() string {
	return fmt.Sprintf("%s is of format version %q; this cairn reads %s", e.key, e.format, tarball.FormatVersion)
}

// tarballSource is a backup's tarball in a location, and the limits it is
// read under.
type tarballSource struct {
	loc    *location.Location
	key    string
	limits tarball.Limits
	// want, when set, is the tarball's digest in the backup's manifest:
	// a tarball that differs is corrupt.
	want *location.Digest
}

// readTarball streams the tarball through walk, which returns the
// format version it read. A failure to read the location is returned as
// is (worth a retry); a tarball that does not decode, or is past the
// limits, is a *corruptError, and one of an unknown format version an
// *unsupportedError.
func readTarball(ctx context.Context, src tarballSource, walk func(io.Reader) (string, error)) error {
	var r io.ReadCloser
	var err error
	if src.want != nil {
		r, err = src.loc.NewCheckedReader(ctx, src.key, *src.want)
	} else {
		r, err = src.loc.NewReader(ctx, src.key)
	}
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read only
	format, err := walk(r)
	if err == nil && src.want != nil {
		// The digest is checked at the end of the stored bytes, which
		// the manifest bounds.
		_, err = io.Copy(io.Discard, r)
	}
	switch {
	case errors.Is(err, location.ErrChecksum):
		return &corruptError{err}
	case errors.Is(err, tarball.ErrCorrupt):
		return &corruptError{fmt.Errorf("%s: %w", src.key, err)}
	case err != nil:
		return err
	case format == "":
		return &corruptError{fmt.Errorf("%s has no metadata/version: not a backup tarball", src.key)}
	case format != tarball.FormatVersion:
		return &unsupportedError{format: format, key: src.key}
	}
	return nil
}
