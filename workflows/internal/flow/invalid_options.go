package flow

import (
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// InvalidOptions fails a run started with options out of bounds (the
// starter refuses them first; this guards a run started another way) for
// good: no retry makes them valid.
func InvalidOptions(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	msg := "invalid options: " + strings.Join(problems, "; ")
	return temporal.NewNonRetryableApplicationError(msg, v1alpha1.ErrTypeInvalidSpec, nil)
}
