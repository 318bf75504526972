package flowtest

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cairn-backup/cairn/internal/activitytest"
	"github.com/cairn-backup/cairn/workflows"
)

// RequireInvalidOptions requires err to be a run's refusal of its options
// for good, naming want.
func RequireInvalidOptions(t *testing.T, err error, want string) {
	t.Helper()
	activitytest.RequireNonRetryable(t, err, workflows.ErrTypeInvalidSpec)
	assert.ErrorContains(t, err, want)
}
