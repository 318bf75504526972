// Package remote is a client of cairn's starter API: the CLI's path for a
// user who has a Kubernetes token rather than access to Temporal. The API
// authenticates the token and authorizes every call, so the user gets
// exactly what RBAC grants them.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// maxReplyBytes bounds a reply the client decodes (logs are streamed).
const maxReplyBytes = 64 << 20

// Client calls the starter API at a base URL. Its HTTP client carries the
// caller's credentials (see Authorizing).
type Client struct {
	base *url.URL
	http *http.Client
	// namespace, when set, is the namespace whose backups, restores and
	// schedules the client speaks of (the API's namespaced paths).
	namespace string
}

var _ starter.Service = (*Client)(nil)

// New returns a client of the API at server (https://host:port, or
// http:// for a loopback `cairn dev`), sending requests with hc.
func New(server string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: an http(s)://host:port URL", server)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		// The token would cross the network in the clear.
		return nil, fmt.Errorf("--server %q: plain http only to a loopback address; use https", server)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Client{base: u, http: hc}, nil
}

// do sends a request and decodes a JSON reply into out (nil: none). A
// status of 400 and above becomes the starter error it stands for, so
// the CLI's exit codes are the same either way.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, err := c.send(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxReplyBytes)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the reply: %w", method, path, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, error) {
	u := *c.base
	// path is escaped already (a name's own characters stay in their segment).
	u.RawPath = c.base.EscapedPath() + path
	u.Path, _ = url.PathUnescape(u.RawPath)
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cairn API at %s: %w", c.base.Host, err)
	}
	if resp.StatusCode >= 400 {
		defer func() { _ = resp.Body.Close() }()
		return nil, replyError(resp)
	}
	return resp, nil
}

// replyError turns an error reply into the starter error of its status.
func replyError(resp *http.Response) error {
	var body struct {
		Error    string   `json:"error"`
		Problems []string `json:"problems"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(data, &body) != nil || body.Error == "" {
		body.Error = strings.TrimSpace(string(data))
		if body.Error == "" {
			body.Error = resp.Status
		}
	}
	switch resp.StatusCode {
	case http.StatusBadRequest:
		if len(body.Problems) == 0 {
			body.Problems = []string{body.Error}
		}
		return &starter.InvalidError{Problems: body.Problems}
	case http.StatusNotFound:
		return fmt.Errorf("%s: %w", body.Error, starter.ErrNotFound)
	case http.StatusConflict:
		return &starter.ConflictError{Message: body.Error}
	case http.StatusUnauthorized:
		return &starter.UnauthenticatedError{Message: body.Error}
	case http.StatusForbidden:
		return &starter.ForbiddenError{Message: body.Error}
	}
	return fmt.Errorf("cairn API: %s: %s", resp.Status, body.Error)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// InNamespace is a client of the backups, restores and schedules of
// namespace ns: names are ns's own, and what it starts takes ns only.
// Etcd snapshots stay the cluster's.
func (c *Client) InNamespace(ns string) *Client {
	in := *c
	in.namespace = ns
	return &in
}

// kind is the path of a kind's collection.
func (c *Client) kind(kind string) string {
	if c.namespace == "" || kind == "etcd-snapshots" {
		return "/v1/" + kind
	}
	return "/v1/namespaces/" + url.PathEscape(c.namespace) + "/" + kind
}

func (c *Client) named(kind, name string) string { return c.kind(kind) + "/" + url.PathEscape(name) }

// DefaultLocation names what the API's listings cover: every location it
// is configured with.
func (c *Client) DefaultLocation() string { return "the locations of the API at " + c.base.Host }

func (c *Client) CreateBackup(ctx context.Context, req starter.CreateBackupRequest) (*starter.CreateResult, error) {
	var res starter.CreateResult
	return &res, c.do(ctx, http.MethodPost, c.kind("backups"), nil, req, &res)
}

func (c *Client) DryRunBackup(ctx context.Context, req starter.CreateBackupRequest) (*v1alpha1.BackupDryRun, error) {
	req.DryRun = true
	var res v1alpha1.BackupDryRun
	return &res, c.do(ctx, http.MethodPost, c.kind("backups"), nil, req, &res)
}

func (c *Client) GetBackup(ctx context.Context, name string) (*starter.BackupView, error) {
	var v starter.BackupView
	return &v, c.do(ctx, http.MethodGet, c.named("backups", name), nil, nil, &v)
}

func (c *Client) ListBackups(ctx context.Context) (*starter.BackupList, error) {
	var l starter.BackupList
	return &l, c.do(ctx, http.MethodGet, c.kind("backups"), nil, nil, &l)
}

func (c *Client) CancelBackup(ctx context.Context, name string) (*starter.BackupView, error) {
	var v starter.BackupView
	return &v, c.do(ctx, http.MethodPost, c.named("backups", name)+"/cancel", nil, nil, &v)
}

func (c *Client) DeleteBackup(ctx context.Context, name string, cancelRunning bool) (*starter.CreateResult, error) {
	q := url.Values{}
	if cancelRunning {
		q.Set("cancel", "true")
	}
	var res starter.CreateResult
	return &res, c.do(ctx, http.MethodDelete, c.named("backups", name), q, nil, &res)
}

func (c *Client) BackupLogs(ctx context.Context, name string, w io.Writer) error {
	return c.copy(ctx, c.named("backups", name)+"/logs", w)
}

func (c *Client) VerifyBackup(ctx context.Context, name string, full bool) (*v1alpha1.VerifyBackupResult, error) {
	q := url.Values{}
	if full {
		q.Set("full", "true")
	}
	var r v1alpha1.VerifyBackupResult
	return &r, c.do(ctx, http.MethodPost, c.named("backups", name)+"/verify", q, nil, &r)
}

func (c *Client) CreateRestore(ctx context.Context, req starter.CreateRestoreRequest) (*starter.CreateResult, error) {
	var res starter.CreateResult
	return &res, c.do(ctx, http.MethodPost, c.kind("restores"), nil, req, &res)
}

func (c *Client) DryRunRestore(ctx context.Context, req starter.CreateRestoreRequest) (*v1alpha1.RestoreDryRun, error) {
	req.DryRun = true
	var res v1alpha1.RestoreDryRun
	return &res, c.do(ctx, http.MethodPost, c.kind("restores"), nil, req, &res)
}

func (c *Client) GetRestore(ctx context.Context, name string) (*starter.RestoreView, error) {
	var v starter.RestoreView
	return &v, c.do(ctx, http.MethodGet, c.named("restores", name), nil, nil, &v)
}

func (c *Client) ListRestores(ctx context.Context) (*starter.RestoreList, error) {
	var l starter.RestoreList
	return &l, c.do(ctx, http.MethodGet, c.kind("restores"), nil, nil, &l)
}

func (c *Client) CancelRestore(ctx context.Context, name string) (*starter.RestoreView, error) {
	var v starter.RestoreView
	return &v, c.do(ctx, http.MethodPost, c.named("restores", name)+"/cancel", nil, nil, &v)
}

func (c *Client) RestoreLogs(ctx context.Context, name string, w io.Writer) error {
	return c.copy(ctx, c.named("restores", name)+"/logs", w)
}

func (c *Client) RestoreResults(ctx context.Context, name string) (*v1alpha1.RestoreResults, error) {
	var r v1alpha1.RestoreResults
	return &r, c.do(ctx, http.MethodGet, c.named("restores", name)+"/results", nil, nil, &r)
}

func (c *Client) CreateSchedule(ctx context.Context, spec v1alpha1.ScheduleSpec) (*starter.CreateResult, error) {
	var res starter.CreateResult
	return &res, c.do(ctx, http.MethodPost, c.kind("schedules"), nil, spec, &res)
}

func (c *Client) GetSchedule(ctx context.Context, name string) (*starter.ScheduleView, error) {
	var v starter.ScheduleView
	return &v, c.do(ctx, http.MethodGet, c.named("schedules", name), nil, nil, &v)
}

func (c *Client) ListSchedules(ctx context.Context) (*starter.ScheduleList, error) {
	var l starter.ScheduleList
	return &l, c.do(ctx, http.MethodGet, c.kind("schedules"), nil, nil, &l)
}

func (c *Client) UpdateSchedule(ctx context.Context, name string, spec v1alpha1.ScheduleSpec) (*starter.ScheduleView, error) {
	var v starter.ScheduleView
	return &v, c.do(ctx, http.MethodPut, c.named("schedules", name), nil, spec, &v)
}

func (c *Client) PauseSchedule(ctx context.Context, name, note string) (*starter.ScheduleView, error) {
	return c.note(ctx, name, "pause", note)
}

func (c *Client) UnpauseSchedule(ctx context.Context, name, note string) (*starter.ScheduleView, error) {
	return c.note(ctx, name, "unpause", note)
}

func (c *Client) note(ctx context.Context, name, verb, note string) (*starter.ScheduleView, error) {
	q := url.Values{}
	if note != "" {
		q.Set("note", note)
	}
	var v starter.ScheduleView
	return &v, c.do(ctx, http.MethodPost, c.named("schedules", name)+"/"+verb, q, nil, &v)
}

func (c *Client) TriggerSchedule(ctx context.Context, name string) (*starter.TriggerResult, error) {
	var r starter.TriggerResult
	return &r, c.do(ctx, http.MethodPost, c.named("schedules", name)+"/trigger", nil, nil, &r)
}

func (c *Client) DeleteSchedule(ctx context.Context, name string) (*starter.ScheduleDeleted, error) {
	var r starter.ScheduleDeleted
	return &r, c.do(ctx, http.MethodDelete, c.named("schedules", name), nil, nil, &r)
}

func (c *Client) CreateEtcdSnapshot(ctx context.Context, spec v1alpha1.EtcdSnapshotSpec) (*starter.CreateResult, error) {
	var res starter.CreateResult
	return &res, c.do(ctx, http.MethodPost, c.kind("etcd-snapshots"), nil, spec, &res)
}

func (c *Client) GetEtcdSnapshot(ctx context.Context, name string) (*starter.EtcdSnapshotView, error) {
	var v starter.EtcdSnapshotView
	return &v, c.do(ctx, http.MethodGet, c.named("etcd-snapshots", name), nil, nil, &v)
}

func (c *Client) ListEtcdSnapshots(ctx context.Context) (*starter.EtcdSnapshotList, error) {
	var l starter.EtcdSnapshotList
	return &l, c.do(ctx, http.MethodGet, c.kind("etcd-snapshots"), nil, nil, &l)
}

func (c *Client) DeleteEtcdSnapshot(ctx context.Context, name string) (*starter.CreateResult, error) {
	var res starter.CreateResult
	return &res, c.do(ctx, http.MethodDelete, c.named("etcd-snapshots", name), nil, nil, &res)
}

// copy streams a log download into w.
func (c *Client) copy(ctx context.Context, path string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}
