package starter

import (
	"context"
	"errors"

	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/workflows"
)

// BackupList is the answer of ListBackups.
type BackupList struct {
	Items []*BackupView `json:"items"`
	// Unreadable names backups in the location whose backup.json could not
	// be read, with the reason; they are not in Items.
	Unreadable []string `json:"unreadable,omitempty"`
}

// ListBackups lists the backups Temporal knows of and those committed in
// the default location, merged by name, newest first. A fresh install
// pointed at a location thus lists the backups already there.
func (c *Client) ListBackups(ctx context.Context) (*BackupList, error) {
	byName, err := listRuns[workflows.BackupSpec, workflows.BackupStatus](ctx, c, workflows.KindBackup)
	if err != nil {
		return nil, err
	}
	for _, v := range byName {
		v.Format = workflows.BackupFormatCairn
	}
	list := &BackupList{}
	if c.opts.DefaultLocation != "" {
		committed, unreadable, err := committedBackups(ctx, c.opts.DefaultLocation)
		if err != nil {
			return nil, err
		}
		list.Unreadable = unreadable
		inLocation := map[string]bool{}
		for _, meta := range committed {
			inLocation[meta.Name] = true
		}
		for name, v := range byName {
			if !committedPhase(v.Phase) || inLocation[name] {
				continue
			}
			// Committed once, no longer in its location: deleted. (A run
			// in another location is looked up there.)
			if sameLocation(v.Location, c.opts.DefaultLocation) {
				delete(byName, name)
			} else if _, err := readMetadata(ctx, c.locationOr(v.Location), name); errors.Is(err, ErrNotFound) {
				delete(byName, name)
			}
		}
		for _, meta := range committed {
			fromLocation := viewOfMetadata(meta, c.opts.DefaultLocation)
			if v, ok := byName[meta.Name]; ok {
				v.Phase, v.Spec, v.Status, v.Format = fromLocation.Phase, fromLocation.Spec, fromLocation.Status, fromLocation.Format
				continue
			}
			byName[meta.Name] = fromLocation
		}
	}
	for _, v := range byName {
		// A Velero backup still being written has no run to query.
		if !v.Phase.Done() && v.WorkflowID != "" {
			addLiveStatus(ctx, c, v)
		}
		list.Items = append(list.Items, v)
	}
	newestFirst(list.Items)
	return list, nil
}

// sameLocation compares two location URLs as given or normalized.
func sameLocation(a, b string) bool {
	na, errA := location.Normalize(a)
	nb, errB := location.Normalize(b)
	return errA == nil && errB == nil && na == nb
}
