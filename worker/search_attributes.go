package worker

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// RegisterSearchAttributes adds cairn's custom search attributes to the
// namespace, leaving the ones already there alone; safe to call at every
// start-up.
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	existing, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range v1alpha1.SearchAttributeNames() {
		if _, ok := existing.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("add search attributes %v: %w", missing, err)
	}
	return nil
}
