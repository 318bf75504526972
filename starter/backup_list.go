package starter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

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
	byName := map[string]*BackupView{}
	query := fmt.Sprintf("%s = %q", workflows.SearchAttrKind.GetName(), workflows.KindBackup)
	var token []byte
	for {
		resp, err := c.temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: c.opts.Namespace, Query: query, NextPageToken: token,
		})
		var invalid *serviceerror.InvalidArgument
		if errors.As(err, &invalid) && strings.Contains(invalid.Error(), "search attribute") {
			// No worker has registered cairn's search attributes on this
			// namespace yet, so Temporal holds no cairn runs: list the
			// location alone.
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list backup workflows: %w", err)
		}
		for _, info := range resp.GetExecutions() {
			v := c.viewOf(info)
			if v.Name == "" {
				continue
			}
			if prev, ok := byName[v.Name]; !ok || later(v, prev) {
				byName[v.Name] = v
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	list := &BackupList{}
	if c.opts.DefaultLocation != "" {
		committed, unreadable, err := committedBackups(ctx, c.opts.DefaultLocation)
		if err != nil {
			return nil, err
		}
		list.Unreadable = unreadable
		for _, meta := range committed {
			fromLocation := viewOfMetadata(meta, c.opts.DefaultLocation)
			if v, ok := byName[meta.Name]; ok {
				v.Phase, v.Spec, v.Status = fromLocation.Phase, fromLocation.Spec, fromLocation.Status
				continue
			}
			byName[meta.Name] = fromLocation
		}
	}
	for _, v := range byName {
		if !v.Phase.Done() {
			c.addLiveStatus(ctx, v)
		}
		list.Items = append(list.Items, v)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		if later(list.Items[i], list.Items[j]) {
			return true
		}
		if later(list.Items[j], list.Items[i]) {
			return false
		}
		return list.Items[i].Name < list.Items[j].Name
	})
	return list, nil
}

// addLiveStatus fills a running backup's status from its status query; a
// backup whose worker is down simply shows no counts.
func (c *Client) addLiveStatus(ctx context.Context, v *BackupView) {
	resp, err := c.temporal.QueryWorkflow(ctx, v.WorkflowID, v.RunID, workflows.QueryStatus)
	if err != nil {
		return
	}
	var status workflows.BackupStatus
	if resp.Get(&status) == nil {
		v.Status = &status
		if status.Phase != "" {
			v.Phase = status.Phase
		}
	}
}

func later(a, b *BackupView) bool {
	switch {
	case a.StartTime == nil:
		return false
	case b.StartTime == nil:
		return true
	}
	return a.StartTime.After(*b.StartTime)
}
