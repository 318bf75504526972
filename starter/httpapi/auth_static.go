package httpapi

import (
	"context"
	"crypto/subtle"

	"github.com/cairn-backup/cairn/starter"
)

// DevUser is the user of the token `cairn dev` generates.
const DevUser = "cairn-dev"

// StaticToken lets the holder of token do everything: `cairn dev`'s API,
// where the one user is whoever started it.
func StaticToken(token string, anonymousPaths []string) Auth {
	return Auth{
		Authenticate: func(_ context.Context, got string) (*User, error) {
			if token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				return nil, &starter.UnauthenticatedError{Message: "the bearer token is not this API's token"}
			}
			return &User{Name: DevUser}, nil
		},
		Authorize:      func(context.Context, *User, Access) (bool, string, error) { return true, "", nil },
		AnonymousPaths: anonymousPaths,
	}
}
