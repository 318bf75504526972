package kube

import (
	"context"
	"errors"

	"k8s.io/client-go/rest"
)

// ErrNoRawClient is CreateRaw's answer on clients made by hand.
var ErrNoRawClient = errors.New("clients have no raw REST client")

// CreateRaw creates the object body holds as r, in namespace ns when r
// is namespaced, and returns the server's answer undecoded. The dynamic
// client decodes every answer into a map, half of what a create costs
// the client, while a restore needs something from few of them.
func (c *Clients) CreateRaw(ctx context.Context, r Resource, ns string, body []byte, dryRun bool) ([]byte, error) {
	if c.raw == nil {
		return nil, ErrNoRawClient
	}
	req := c.raw.Post().AbsPath(collectionPath(r, ns)...).Body(body)
	if dryRun {
		req = req.Param("dryRun", "All")
	}
	return answer(req.Do(ctx))
}

// answer is a request's body, or the API error the server's Status
// names. DoRaw would keep only the HTTP code of a refusal: a message
// such as which field was invalid, or which rights were missing, would
// read "unknown".
func answer(res rest.Result) ([]byte, error) {
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}

// CanCreateRaw says whether CreateRaw can be used.
func (c *Clients) CanCreateRaw() bool { return c.raw != nil }
