package starter

import (
	"errors"
	"fmt"
	"net/http"

	"go.temporal.io/api/serviceerror"
)

// ErrNotFound means no backup (or restore) of that name exists, neither in
// Temporal nor in the backup location.
var ErrNotFound = errors.New("not found")

// InvalidError is a request that cannot succeed as written. Nothing was
// started; Problems lists every issue so a user fixes them in one go.
type InvalidError struct {
	Problems []string
}

func (e *InvalidError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid request: " + e.Problems[0]
	}
	return fmt.Sprintf("invalid request: %d problems: %v", len(e.Problems), e.Problems)
}

// ConflictError is a request that clashes with what exists: the same name
// with another spec, or an action the current phase does not allow.
type ConflictError struct {
	Message string
}

func (e *ConflictError) Error() string { return e.Message }

// UnauthenticatedError is a request without a valid bearer token.
type UnauthenticatedError struct {
	Message string
}

func (e *UnauthenticatedError) Error() string { return e.Message }

// ForbiddenError is a request the caller is not allowed to make; Message
// names the permission it lacks.
type ForbiddenError struct {
	Message string
}

func (e *ForbiddenError) Error() string { return e.Message }

// Exit codes of the CLI, so scripts can act on the kind of failure.
const (
	ExitOK              = 0
	ExitError           = 1 // anything else: Temporal unreachable, I/O errors
	ExitInvalid         = 2 // bad flags or spec; nothing was started
	ExitConflict        = 3 // name taken by another spec, or wrong phase
	ExitNotFound        = 4
	ExitPartiallyFailed = 5 // --wait: the backup ended PartiallyFailed
	ExitFailed          = 6 // --wait: the backup ended Failed or Canceled
	ExitDenied          = 7 // the API refused the caller: no valid token, or no permission
)

// HTTPStatus maps an error of this package to the status the API returns.
func HTTPStatus(err error) int {
	var invalid *InvalidError
	var conflict *ConflictError
	var unavailable *serviceerror.Unavailable
	var unauthenticated *UnauthenticatedError
	var forbidden *ForbiddenError
	switch {
	case errors.As(err, &unauthenticated):
		return http.StatusUnauthorized
	case errors.As(err, &forbidden):
		return http.StatusForbidden
	case errors.As(err, &invalid):
		return http.StatusBadRequest
	case errors.As(err, &conflict):
		return http.StatusConflict
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.As(err, &unavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// ExitCode maps an error of this package to the CLI's exit code.
func ExitCode(err error) int {
	switch HTTPStatus(err) {
	case http.StatusBadRequest:
		return ExitInvalid
	case http.StatusConflict:
		return ExitConflict
	case http.StatusNotFound:
		return ExitNotFound
	case http.StatusUnauthorized, http.StatusForbidden:
		return ExitDenied
	}
	return ExitError
}

// ErrorType names the kind of error in API responses.
func ErrorType(err error) string {
	switch HTTPStatus(err) {
	case http.StatusBadRequest:
		return "Invalid"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusServiceUnavailable:
		return "Unavailable"
	}
	return "Internal"
}
