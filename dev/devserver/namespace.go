package devserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairn-backup/cairn/internal/clock"
	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/durationpb"
)

// pollInterval paces the readiness loops below.
const pollInterval = 100 * time.Millisecond

// dialReady connects to the frontend and waits until it answers for
// namespace.
func dialReady(ctx context.Context, opts client.Options) (client.Client, error) {
	var lastErr error
	for {
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: opts.Namespace})
			if err == nil {
				return c, nil
			}
			c.Close()
		}
		lastErr = err
		if err := clock.Sleep(ctx, pollInterval); err != nil {
			return nil, fmt.Errorf("wait for frontend %s: %w (last error: %w)", opts.HostPort, err, lastErr)
		}
	}
}

// ensureRetention sets the namespace's workflow retention if it differs.
func ensureRetention(ctx context.Context, log *zap.Logger, c client.Client, namespace string, retention time.Duration) error {
	svc := c.WorkflowService()
	desc, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("describe namespace %q: %w", namespace, err)
	}
	if desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() == retention {
		return nil
	}
	_, err = svc.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
		Namespace: namespace,
		Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(retention)},
	})
	if err != nil {
		return fmt.Errorf("set retention of namespace %q to %s: %w", namespace, retention, err)
	}
	log.Info("namespace retention updated", zap.String("namespace", namespace), zap.Duration("retention", retention))
	return nil
}

// ensureSearchAttributes registers the custom search attributes in want
// that namespace lacks. One that exists with another type is an error: the
// SQLite store cannot change a slot's type.
func ensureSearchAttributes(ctx context.Context, log *zap.Logger, c client.Client, namespace string, want map[string]enumspb.IndexedValueType) error {
	if len(want) == 0 {
		return nil
	}
	op := c.OperatorService()
	list, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %q: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		typ := want[name]
		if _, system := list.GetSystemAttributes()[name]; system {
			return fmt.Errorf("search attribute %q is a system attribute", name)
		}
		have, ok := list.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = typ
		case have != typ:
			return fmt.Errorf("search attribute %q exists in namespace %q as %s, want %s", name, namespace, have, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(missing))
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("add search attributes %v to namespace %q: %w", names, namespace, err)
	}
	log.Info("search attributes registered", zap.String("namespace", namespace), zap.Strings("names", names))
	return waitSearchAttributes(ctx, c, namespace, names)
}

// waitSearchAttributes waits until the frontend accepts visibility queries
// naming each of names. On SQLite a search attribute is a per-namespace
// alias, which the frontend learns at its next namespace cache refresh
// (about two seconds); until then starting a workflow with it fails.
func waitSearchAttributes(ctx context.Context, c client.Client, namespace string, names []string) error {
	for _, name := range names {
		query := fmt.Sprintf("`%s` IS NULL", name)
		for {
			_, err := c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
				Namespace: namespace,
				Query:     query,
			})
			if err == nil {
				break
			}
			if werr := clock.Sleep(ctx, pollInterval); werr != nil {
				return fmt.Errorf("wait for search attribute %q: %w (last error: %w)", name, werr, err)
			}
		}
	}
	return nil
}
