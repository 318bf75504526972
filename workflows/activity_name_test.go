package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

type namedActivities struct{}

func (*namedActivities) FinalizeBackup(context.Context, string) error { return nil }

func TestActivityNameIsTheMethodName(t *testing.T) {
	var a *namedActivities
	assert.Equal(t, "FinalizeBackup", ActivityName(a.FinalizeBackup))
}
