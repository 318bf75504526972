package flowtest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/activitytest"
)

// RequireInvalidOptions requires err to be a run's refusal of its options
// for good, naming want.
func RequireInvalidOptions(t *testing.T, err error, want string) {
	t.Helper()
	activitytest.RequireNonRetryable(t, err, v1alpha1.ErrTypeInvalidSpec)
	assert.ErrorContains(t, err, want)
}
