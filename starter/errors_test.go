package starter

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/api/serviceerror"
)

func TestErrorMapping(t *testing.T) {
	cases := []struct {
		err    error
		status int
		exit   int
		typ    string
	}{
		{&InvalidError{Problems: []string{"x"}}, http.StatusBadRequest, ExitInvalid, "Invalid"},
		{fmt.Errorf("wrapped: %w", &ConflictError{Message: "taken"}), http.StatusConflict, ExitConflict, "Conflict"},
		{fmt.Errorf("backup %q: %w", "b", ErrNotFound), http.StatusNotFound, ExitNotFound, "NotFound"},
		{serviceerror.NewUnavailable("down"), http.StatusServiceUnavailable, ExitError, "Unavailable"},
		{errors.New("boom"), http.StatusInternalServerError, ExitError, "Internal"},
	}
	for _, c := range cases {
		assert.Equal(t, c.status, HTTPStatus(c.err), c.err.Error())
		assert.Equal(t, c.exit, ExitCode(c.err), c.err.Error())
		assert.Equal(t, c.typ, ErrorType(c.err), c.err.Error())
	}
}

func TestRunURLEscapesWorkflowID(t *testing.T) {
	c := New(nil, Options{UIBaseURL: "http://127.0.0.1:8233/"})
	assert.Equal(t, "http://127.0.0.1:8233/namespaces/default/workflows/backup%2Fnightly/run-1/history", c.RunURL("backup/nightly", "run-1"))
	assert.Empty(t, New(nil, Options{}).RunURL("backup/x", "r"))
}
