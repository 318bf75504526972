package starter

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// A dry run that failed answers with the status of what stopped it, so a
// script tells a refusal from a bad spec from a missing backup.
func TestDryRunFailuresKeepTheirStatus(t *testing.T) {
	for errType, status := range map[string]int{
		v1alpha1.ErrTypeForbidden:      http.StatusForbidden,
		v1alpha1.ErrTypeInvalidSpec:    http.StatusBadRequest,
		v1alpha1.ErrTypeBackupNotFound: http.StatusNotFound,
		v1alpha1.ErrTypeBackupNotReady: http.StatusConflict,
		v1alpha1.ErrTypeCorruptBackup:  http.StatusInternalServerError,
	} {
		cause := temporal.NewNonRetryableApplicationError("why", errType, nil)
		// As a workflow's error reaches the client: its step wrapped it.
		wrapped := temporal.NewApplicationErrorWithCause("plan: why", "wrapError", cause)
		for _, err := range []error{dryRunFailure("shop-1", cause), dryRunFailure("shop-1", fmt.Errorf("workflow: %w", wrapped))} {
			assert.Equal(t, status, HTTPStatus(err), errType)
			assert.Contains(t, err.Error(), "why")
		}
	}
}
