package starter

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// BackupList is the answer of ListBackups.
type BackupList struct {
	Items []*BackupView `json:"items"`
	// Unreadable names backups in the location whose backup.json could not
	// be read, with the reason; they are not in Items.
	Unreadable []string `json:"unreadable,omitempty"`
}

// ListBackups lists the backups Temporal knows of and those committed in
// the locations (the default, and with a catalog every location of it),
// merged by name, newest first. A fresh install pointed at a location
// thus lists the backups already there. A location other than the
// default that cannot be read is reported in Unreadable.
func (c *Client) ListBackups(ctx context.Context) (*BackupList, error) {
	byName, err := listRuns[v1alpha1.BackupSpec, v1alpha1.BackupStatus](ctx, c, v1alpha1.KindBackup)
	if err != nil {
		return nil, err
	}
	for _, v := range byName {
		v.Format = v1alpha1.BackupFormatCairn
	}
	list := &BackupList{}
	var listed []listedLocation
	for i, loc := range c.listedLocations() {
		committed, unreadable, err := c.committedBackups(ctx, loc.URL)
		if err != nil && i == 0 {
			return nil, err
		}
		if err != nil {
			list.Unreadable = append(list.Unreadable, fmt.Sprintf("location %s: %v", loc.Name, err))
			continue
		}
		for _, u := range unreadable {
			if i > 0 {
				u = "location " + loc.Name + ": " + u
			}
			list.Unreadable = append(list.Unreadable, u)
		}
		names := map[string]bool{}
		for _, m := range committed {
			names[m.Name] = true
		}
		listed = append(listed, listedLocation{url: loc.URL, committed: committed, names: names})
	}
	for name, v := range byName {
		if !committedPhase(v.Phase) {
			continue
		}
		// Committed once, no longer in its location: deleted. A run in a
		// location not listed is looked up there.
		if in, ok := committedIn(listed, c.locationOr(v.Location)); ok {
			if !in[name] {
				delete(byName, name)
			}
		} else if _, err := c.readMetadata(ctx, c.locationOr(v.Location), name); errors.Is(err, ErrNotFound) {
			delete(byName, name)
		}
	}
	for _, l := range listed {
		for _, meta := range l.committed {
			fromLocation := viewOfMetadata(meta, l.url)
			v, ok := byName[meta.Name]
			switch {
			case !ok:
				byName[meta.Name] = fromLocation
			case sameLocation(c.locationOr(v.Location), l.url):
				v.Phase, v.Spec, v.Status, v.Format = fromLocation.Phase, fromLocation.Spec, fromLocation.Status, fromLocation.Format
			}
		}
	}
	for name, v := range byName {
		if !inNamespace(ctx, name) {
			continue
		}
		// A Velero backup still being written has no run to query.
		if !v.Phase.Done() && v.WorkflowID != "" {
			addLiveStatus(ctx, c, v)
		}
		list.Items = append(list.Items, v)
	}
	newestFirst(list.Items)
	list.Unreadable = unreadableIn(ctx, list.Unreadable)
	return list, nil
}

// listedLocation is what one location holds, and the names of it.
type listedLocation struct {
	url       string
	committed []*v1alpha1.BackupMetadata
	names     map[string]bool
}

// committedIn is the names committed in url, when url is listed.
func committedIn(listed []listedLocation, url string) (map[string]bool, bool) {
	for _, l := range listed {
		if sameLocation(l.url, url) {
			return l.names, true
		}
	}
	return nil, false
}

// listedLocations are the locations ListBackups reads: the default
// first, then the catalog's others.
func (c *Client) listedLocations() []location.Entry {
	if c.opts.Locations == nil {
		if c.opts.DefaultLocation == "" {
			return nil
		}
		return []location.Entry{{Name: location.DefaultName, URL: c.opts.DefaultLocation}}
	}
	out := []location.Entry{{Name: c.opts.Locations.Default, URL: c.opts.Locations.DefaultURL()}}
	for _, e := range c.opts.Locations.Entries() {
		if e.Name != c.opts.Locations.Default {
			out = append(out, e)
		}
	}
	return out
}

// sameLocation compares two location URLs as given or normalized.
func sameLocation(a, b string) bool {
	na, errA := location.Normalize(a)
	nb, errB := location.Normalize(b)
	return errA == nil && errB == nil && na == nb
}
