// Package starter is cairn's client library: it validates requests, starts,
// inspects and cancels backups through Temporal, and reads what backup
// locations already hold. The CLI and the HTTP starter API both use it.
package starter

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// Options configure a Client.
type Options struct {
	// Namespace is the Temporal namespace the workflows run in.
	Namespace string
	// DefaultLocation is the backup location URL used when a spec names none,
	// and the one listed for backups Temporal no longer remembers.
	DefaultLocation string
	// Locations, when set, are the only locations requests may use, by
	// name (the API); DefaultLocation is then their default's URL. Nil
	// takes any URL (the CLI).
	Locations *location.Catalog
	// Opener opens locations with the encryption key that reads run logs
	// and results; nil reads only what was written in plain.
	Opener *location.Opener
	// UIBaseURL is the Temporal Web UI, for links to runs ("" for none).
	UIBaseURL string
	// ValidationTimeout bounds the wait for a worker to check resource
	// filters against the cluster (default 15s). When no worker answers in
	// time the backup starts anyway and its plan checks the same thing.
	ValidationTimeout time.Duration
	// StatusQueryTimeout bounds the wait for a worker to answer a run's
	// status query (default 5s). With no live worker a view keeps what
	// the search attributes say instead of waiting for the RPC deadline.
	StatusQueryTimeout time.Duration
}

// Client starts and inspects cairn workflows.
type Client struct {
	temporal client.Client
	opts     Options
}

// New returns a Client over an already dialled Temporal client.
func New(tc client.Client, opts Options) *Client {
	if opts.ValidationTimeout <= 0 {
		opts.ValidationTimeout = 15 * time.Second
	}
	if opts.StatusQueryTimeout <= 0 {
		opts.StatusQueryTimeout = 5 * time.Second
	}
	if opts.Namespace == "" {
		opts.Namespace = client.DefaultNamespace
	}
	if opts.Locations != nil {
		opts.DefaultLocation = opts.Locations.DefaultURL()
	}
	return &Client{temporal: tc, opts: opts}
}

// DefaultLocation is the location used when a spec names none.
func (c *Client) DefaultLocation() string { return c.opts.DefaultLocation }

// RunURL links to a workflow run in the Temporal Web UI.
func (c *Client) RunURL(workflowID, runID string) string {
	if c.opts.UIBaseURL == "" || workflowID == "" {
		return ""
	}
	u := fmt.Sprintf("%s/namespaces/%s/workflows/%s", strings.TrimSuffix(c.opts.UIBaseURL, "/"),
		url.PathEscape(c.opts.Namespace), url.PathEscape(workflowID))
	if runID != "" {
		u += "/" + url.PathEscape(runID) + "/history"
	}
	return u
}

// ScheduleURL links to a backup schedule in the Temporal Web UI.
func (c *Client) ScheduleURL(name string) string {
	if c.opts.UIBaseURL == "" {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/schedules/%s", strings.TrimSuffix(c.opts.UIBaseURL, "/"),
		url.PathEscape(c.opts.Namespace), url.PathEscape(v1alpha1.ScheduleID(name)))
}

// CheckHealth says whether Temporal answers.
func (c *Client) CheckHealth(ctx context.Context) error {
	_, err := c.temporal.CheckHealth(ctx, nil)
	return err
}
