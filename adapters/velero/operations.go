package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/vmware-tanzu/velero/pkg/plugin/velero"

	"github.com/cairn-backup/cairn/pkg/extension"
)

type progress = velero.OperationProgress

// progressor asks one action about its operations.
type progressor struct {
	progress func(id string) (progress, error)
	cancel   func(id string) error
}

// await asks the progress of the operations in data until each has
// completed, heartbeating their sum: a retried attempt (this adapter or
// its plugin killed) asks again, since the operation runs in the plugin's
// own system. A cancel of the run, or its timeout, cancels them; this
// attempt ending otherwise (the worker stopping, a heartbeat timeout)
// does not, as the next attempt goes on waiting.
func (a *adapter) await(ctx context.Context, data json.RawMessage, actionNamed func(string) (progressor, bool)) (string, error) {
	var ops []pluginOperation
	if err := json.Unmarshal(data, &ops); err != nil || len(ops) == 0 {
		return "", refused("operation data is not a Velero plugin's operations")
	}
	actions := make([]progressor, len(ops))
	for i, op := range ops {
		p, ok := actionNamed(op.Action)
		if !ok {
			return "", refused("no Velero plugin serves action %s here", op.Action)
		}
		actions[i] = p
	}
	log := a.log.WithFields(logrus.Fields{"operations": len(ops), "attempt": activity.GetInfo(ctx).Attempt})
	for {
		// A plugin's Progress takes no deadline: one that hangs misses
		// the heartbeat, and the next attempt asks again.
		var sum extension.OperationProgress
		var descriptions []string
		done := true
		for i, op := range ops {
			p, err := actions[i].progress(op.ID)
			switch {
			case err != nil && unreachable(err):
				return "", err
			case err != nil:
				return "", refused("velero plugin %s: operation %s: %v", op.Action, op.ID, err)
			case p.Completed && p.Err != "":
				return "", refused("velero plugin %s: operation %s failed: %s", op.Action, op.ID, p.Err)
			}
			done = done && p.Completed
			sum.Done += p.NCompleted
			sum.Total += p.NTotal
			if p.OperationUnits != "" {
				sum.Units = p.OperationUnits
			}
			if p.Description != "" {
				descriptions = append(descriptions, p.Description)
			}
		}
		sum.Description = strings.Join(descriptions, "; ")
		activity.RecordHeartbeat(ctx, sum)
		if done {
			log.Info("Operations completed")
			return sum.Description, nil
		}
		timer := time.NewTimer(a.poll)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			if !temporal.IsCanceledError(context.Cause(ctx)) && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", ctx.Err()
			}
			for i, op := range ops {
				if err := actions[i].cancel(op.ID); err != nil {
					log.WithError(err).WithField("operation", op.ID).Warn("Cancel failed")
				}
			}
			log.Info("Operations canceled")
			return "", ctx.Err()
		}
	}
}
