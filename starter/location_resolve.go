package starter

import (
	"fmt"

	"github.com/cairn-backup/cairn/internal/location"
)

// resolveLocation turns a request's location into the URL the run uses.
// With a catalog (the API) the request names one of the operator's
// locations; without one (the CLI, whose user reaches Temporal directly
// and so could start any workflow anyway) any URL goes. write says the
// request writes a backup there.
func (c *Client) resolveLocation(ref string, write bool) (string, error) {
	if c.opts.Locations == nil {
		return location.Normalize(ref)
	}
	return c.opts.Locations.Resolve(ref, write)
}

// checkDeletable refuses to delete from a read-only location.
func (c *Client) checkDeletable(name, url string) error {
	if c.opts.Locations == nil {
		return nil
	}
	if loc, ro := c.opts.Locations.ReadOnlyURL(url); ro {
		return &ConflictError{Message: fmt.Sprintf("%s is in location %s, which is read-only", name, loc)}
	}
	return nil
}
