package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// pollInterval is how often WaitRun asks the API again.
const pollInterval = time.Second

// WaitRun follows a deletion the API started (the only runs the CLI waits
// for by ID) until what it deletes is gone. The API does not expose
// workflows by ID: it is asked for the backup or snapshot itself.
func (c *Client) WaitRun(ctx context.Context, workflowID, _ string) error {
	gone, err := c.goneCheck(workflowID)
	if err != nil {
		return err
	}
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		done, err := gone(ctx)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

func (c *Client) goneCheck(workflowID string) (func(context.Context) (bool, error), error) {
	if name, ok := strings.CutPrefix(workflowID, "delete/etcd/"); ok && workflowID == v1alpha1.DeleteEtcdWorkflowID(name) {
		return func(ctx context.Context) (bool, error) {
			_, err := c.GetEtcdSnapshot(ctx, name)
			return notFound(err)
		}, nil
	}
	if name, ok := strings.CutPrefix(workflowID, "delete/"); ok && workflowID == v1alpha1.DeleteWorkflowID(name) {
		return func(ctx context.Context) (bool, error) {
			v, err := c.GetBackup(ctx, name)
			if err == nil && v.Phase == v1alpha1.PhaseDeleted {
				return true, nil
			}
			return notFound(err)
		}, nil
	}
	return nil, fmt.Errorf("run %s: the API follows deletions only", workflowID)
}

func notFound(err error) (bool, error) {
	if errors.Is(err, starter.ErrNotFound) {
		return true, nil
	}
	return false, err
}
