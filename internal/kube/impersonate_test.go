package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

func TestAsImpersonatesOrRefuses(t *testing.T) {
	base, err := NewClients(&rest.Config{Host: "https://127.0.0.1:6443"})
	require.NoError(t, err)

	same, err := base.As(Impersonation{})
	require.NoError(t, err)
	assert.Same(t, base, same, "nobody to impersonate: the worker itself")

	as, err := base.As(Impersonation{UserName: "alice", Groups: []string{"team-a"}})
	require.NoError(t, err)
	assert.Equal(t, "alice", as.Config.Impersonate.UserName)
	assert.Empty(t, base.Config.Impersonate.UserName, "the base config is left alone")

	_, err = base.As(Impersonation{Groups: []string{"system:masters"}})
	assert.Error(t, err, "groups without a user are refused, not dropped")
}
