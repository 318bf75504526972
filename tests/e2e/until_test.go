package e2e

import (
	"fmt"
	"testing"
	"time"
)

// until polls cond every tick until it holds, and fails the test when it
// still does not after bound. It is require.Eventually on the test's own
// goroutine: cond may use the test's require helpers, and a condition
// still running when the bound is reached cannot fail the test after it
// ended (which panics and takes every other test of the package down).
func until(t testing.TB, cond func() bool, bound, tick time.Duration, msgAndArgs ...any) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", bound, message(msgAndArgs))
		}
		time.Sleep(tick)
	}
}

func message(msgAndArgs []any) string {
	switch {
	case len(msgAndArgs) == 0:
		return ""
	case len(msgAndArgs) == 1:
		return fmt.Sprint(msgAndArgs[0])
	}
	if format, ok := msgAndArgs[0].(string); ok {
		return fmt.Sprintf(format, msgAndArgs[1:]...)
	}
	return fmt.Sprint(msgAndArgs...)
}
