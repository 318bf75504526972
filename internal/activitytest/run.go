package activitytest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
)

// Run executes the activity fn in env and decodes its result; the error is
// the activity's.
func Run[R any](t *testing.T, env *testsuite.TestActivityEnvironment, fn any, args ...any) (*R, error) {
	t.Helper()
	val, err := env.ExecuteActivity(fn, args...)
	if err != nil {
		return nil, err
	}
	var res R
	require.NoError(t, val.Get(&res))
	return &res, nil
}
