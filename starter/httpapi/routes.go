package httpapi

import (
	"context"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/starter"
)

// route is one operation of the starter API: how the server serves it and
// what the OpenAPI document says of it. The table in routes is the one
// place where the API is written down.
type route struct {
	pattern string // method and path, as http.ServeMux takes them
	summary string
	// body is the request body's type, nil for none; reply is the
	// success answer's type, nil when it is not JSON (media says what).
	body, reply reflect.Type
	media       string
	success     map[int]string
	// failures are the error statuses a client can act on; every
	// operation may also answer 500 and 503 (Temporal unreachable).
	failures map[int]string
	query    map[string]string // query parameter: what it does
	// access is what a caller must be allowed; nil when the handler
	// authorizes from the request body (creates of backups and restores).
	access *Access
	serve  http.HandlerFunc
}

// path is the route's path without its method.
func (r route) path() string {
	_, p, _ := strings.Cut(r.pattern, " ")
	return p
}

// on is the access of a verb on one of cairn's resources, cluster-wide.
func on(verb, resource string) *Access { return &Access{Verb: verb, Resource: resource} }

// logOf is the access to a run's log, like pods/log.
func logOf(resource string) *Access {
	return &Access{Verb: "get", Resource: resource, Subresource: "log"}
}

func onPath(path string) *Access { return &Access{Verb: "get", Path: path} }

const (
	mediaNDJSON     = "application/x-ndjson"
	mediaPrometheus = "text/plain"
)

var (
	started   = map[int]string{http.StatusCreated: "started", http.StatusOK: "the same request again: it exists already"}
	accepted  = map[int]string{http.StatusAccepted: "accepted; the run goes on in the background"}
	ok        = map[int]string{http.StatusOK: "ok"}
	notFound  = map[int]string{http.StatusNotFound: "no such name"}
	invalid   = map[int]string{http.StatusBadRequest: "invalid request: every problem is listed"}
	notActive = map[int]string{http.StatusNotFound: "no such name", http.StatusConflict: "it is not running"}
)

// routes is the starter API. Replies and bodies take their types from the
// client methods that serve them, so the document cannot drift from the
// code.
func (h *handler) routes() []route {
	flat := h.flatRoutes()
	all := slices.Clone(flat)
	for _, rt := range flat {
		if namespacedKind(rt.path()) {
			all = append(all, namespaced(rt))
		}
	}
	return all
}

// namespacedKinds are the kinds that have a resource in a namespace.
var namespacedKinds = []string{"/v1/backups", "/v1/restores", "/v1/schedules"}

func namespacedKind(path string) bool {
	return slices.ContainsFunc(namespacedKinds, func(kind string) bool {
		return path == kind || strings.HasPrefix(path, kind+"/")
	})
}

// namespaced is rt under /v1/namespaces/{namespace}: for a team that may
// act in its namespace only. Names in the path and the body are the
// namespace's own (the run of "nightly" in team-a is team-a.nightly, as
// for a Backup resource), what it starts takes that namespace only, and
// what it lists is that namespace's. The caller needs rt's access in the
// namespace (guarded fills it in).
func namespaced(rt route) route {
	method, path, _ := strings.Cut(rt.pattern, " ")
	rt.pattern = method + " /v1/namespaces/{namespace}" + strings.TrimPrefix(path, "/v1")
	rt.summary += "; of one namespace, by its own names"
	rt.failures = merge(rt.failures, map[int]string{http.StatusBadRequest: "invalid request, or it reaches beyond the namespace: every problem is listed"})
	return rt
}

// pathName is the run a request's {name} names: in a namespace's path,
// the namespace's run of that name.
func pathName(r *http.Request) string {
	return runNameIn(r.PathValue("namespace"), r.PathValue("name"))
}

func (h *handler) flatRoutes() []route {
	c := h.c
	return []route{
		{pattern: "POST /v1/backups", summary: "Start a backup; with dryRun: true, answer what it would take (a BackupDryRun, 200) and start nothing",
			body: reflect.TypeFor[starter.CreateBackupRequest](), reply: reflect.TypeFor[*starter.CreateResult](), success: started,
			failures: map[int]string{http.StatusBadRequest: "invalid spec: every problem is listed", http.StatusConflict: "the name is taken by another spec"},
			serve: createOrDryRun(h, "backup", c.CreateBackup, c.DryRunBackup,
				func(r starter.CreateBackupRequest) bool { return r.DryRun }, h.admitBackup)},
		listRoute(h, "GET /v1/backups", "List backups, newest first", on("list", v1alpha1.ResourceBackups), c.ListBackups),
		nameRoute(h, "GET /v1/backups/{name}", "A backup with its status", on("get", v1alpha1.ResourceBackups), http.StatusOK, c.GetBackup, notFound),
		nameRoute(h, "POST /v1/backups/{name}/cancel", "Cancel a running backup", on("update", v1alpha1.ResourceBackups), http.StatusAccepted,
			announced(h, "Backup cancel requested", c.CancelBackup), notActive),
		logsRoute(h, "GET /v1/backups/{name}/logs", "A backup's log, JSON lines", logOf(v1alpha1.ResourceBackups), c.BackupLogs),
		{pattern: "POST /v1/backups/{name}/verify", summary: "Check a backup's stored objects against its manifest and its volume data with kopia; wait for the verdict",
			reply: typeOf(c.VerifyBackup), success: ok,
			failures: map[int]string{http.StatusNotFound: "no such backup", http.StatusConflict: "the backup is still running"},
			query:    map[string]string{"full": "true reads all the volume data back, not a sample"}, access: on("get", v1alpha1.ResourceBackups), serve: h.verifyBackup},
		{pattern: "DELETE /v1/backups/{name}", summary: "Delete a backup's data", reply: typeOf(c.DeleteBackup), success: accepted,
			failures: map[int]string{http.StatusNotFound: "no such backup", http.StatusConflict: "the backup runs (delete with cancel=true) or Velero wrote it"},
			query:    map[string]string{"cancel": "true cancels a running backup first"}, access: on("delete", v1alpha1.ResourceBackups), serve: h.deleteBackup},

		{pattern: "POST /v1/restores", summary: "Start a restore; with dryRun: true, answer what it would do (a RestoreDryRun, 200) and write nothing",
			body: reflect.TypeFor[starter.CreateRestoreRequest](), reply: reflect.TypeFor[*starter.CreateResult](), success: started,
			failures: map[int]string{http.StatusBadRequest: "invalid spec: every problem is listed", http.StatusNotFound: "the backup is not in the location",
				http.StatusConflict: "the backup runs or cannot be restored, or the name is taken"},
			serve: createOrDryRun(h, "restore", c.CreateRestore, c.DryRunRestore,
				func(r starter.CreateRestoreRequest) bool { return r.DryRun }, h.admitRestore)},
		listRoute(h, "GET /v1/restores", "List restores, newest first", on("list", v1alpha1.ResourceRestores), c.ListRestores),
		nameRoute(h, "GET /v1/restores/{name}", "A restore with its status", on("get", v1alpha1.ResourceRestores), http.StatusOK, c.GetRestore, notFound),
		nameRoute(h, "POST /v1/restores/{name}/cancel", "Cancel a running restore", on("update", v1alpha1.ResourceRestores), http.StatusAccepted,
			announced(h, "Restore cancel requested", c.CancelRestore), notActive),
		logsRoute(h, "GET /v1/restores/{name}/logs", "A restore's log, JSON lines", logOf(v1alpha1.ResourceRestores), c.RestoreLogs),
		nameRoute(h, "GET /v1/restores/{name}/results", "Every item's outcome of a finished restore", on("get", v1alpha1.ResourceRestores),
			http.StatusOK, c.RestoreResults, notFound),

		createRoute(h, "POST /v1/schedules", "Create a backup schedule", "schedule", c.CreateSchedule, h.admitNewSchedule, on("create", v1alpha1.ResourceSchedules),
			map[int]string{http.StatusBadRequest: "invalid spec: every problem is listed", http.StatusConflict: "the name is taken"}),
		listRoute(h, "GET /v1/schedules", "List schedules with their health", on("list", v1alpha1.ResourceSchedules), c.ListSchedules),
		nameRoute(h, "GET /v1/schedules/{name}", "A schedule: spec, health, next runs, running and kept runs", on("get", v1alpha1.ResourceSchedules),
			http.StatusOK, c.GetSchedule, notFound),
		{pattern: "PUT /v1/schedules/{name}", summary: "Replace a schedule's spec", body: reflect.TypeFor[v1alpha1.ScheduleSpec](),
			reply: typeOf(c.UpdateSchedule), success: ok, failures: merge(invalid, notFound), access: on("update", v1alpha1.ResourceSchedules), serve: h.updateSchedule},
		nameRoute(h, "DELETE /v1/schedules/{name}", "Delete a schedule; its backups stay", on("delete", v1alpha1.ResourceSchedules), http.StatusOK,
			announced(h, "Schedule deleted", c.DeleteSchedule), notFound),
		noteRoute(h, "POST /v1/schedules/{name}/pause", "Pause a schedule", "Schedule paused", c.PauseSchedule),
		noteRoute(h, "POST /v1/schedules/{name}/unpause", "Unpause a schedule", "Schedule unpaused", c.UnpauseSchedule),
		nameRoute(h, "POST /v1/schedules/{name}/trigger", "Run a schedule now", on("update", v1alpha1.ResourceSchedules), http.StatusAccepted,
			announced(h, "Schedule triggered", c.TriggerSchedule),
			map[int]string{http.StatusNotFound: "no such schedule", http.StatusConflict: "overlap skip dropped the run"}),

		createRoute(h, "POST /v1/etcd-snapshots", "Take an etcd snapshot", "etcd snapshot", c.CreateEtcdSnapshot, nil, on("create", v1alpha1.ResourceEtcdSnapshots),
			map[int]string{http.StatusBadRequest: "invalid spec: every problem is listed", http.StatusConflict: "the name is taken"}),
		listRoute(h, "GET /v1/etcd-snapshots", "List etcd snapshots", on("list", v1alpha1.ResourceEtcdSnapshots), c.ListEtcdSnapshots),
		nameRoute(h, "GET /v1/etcd-snapshots/{name}", "An etcd snapshot: size, revision, sha256, verified", on("get", v1alpha1.ResourceEtcdSnapshots),
			http.StatusOK, c.GetEtcdSnapshot, notFound),
		nameRoute(h, "DELETE /v1/etcd-snapshots/{name}", "Delete an etcd snapshot", on("delete", v1alpha1.ResourceEtcdSnapshots), http.StatusAccepted,
			announced(h, "etcd snapshot deletion started", c.DeleteEtcdSnapshot),
			map[int]string{http.StatusNotFound: "no such snapshot", http.StatusConflict: "it is still being taken"}),

		{pattern: "GET /metrics", summary: "Prometheus metrics: runs, durations, items, bytes, schedules' health",
			media: mediaPrometheus, success: ok, access: onPath("/metrics"), serve: h.metrics.ServeHTTP},
		{pattern: "GET /healthz", summary: "Whether Temporal answers", reply: reflect.TypeFor[map[string]string](),
			success: ok, access: onPath("/healthz"), serve: h.healthz},
		{pattern: "GET /openapi.json", summary: "This document", media: "application/json", success: ok, access: onPath("/openapi.json"), serve: h.openAPI},
	}
}

// createRoute starts what its body asks for. Its caller must be allowed
// access, or, when access is nil, what authorize says of the body.
func createRoute[R any](h *handler, pattern, summary, kind string, start func(context.Context, R) (*starter.CreateResult, error),
	authorize func(context.Context, *R) error, access *Access, failures map[int]string) route {
	return route{pattern: pattern, summary: summary, body: reflect.TypeFor[R](), reply: reflect.TypeFor[*starter.CreateResult](),
		success: started, failures: failures, access: access, serve: create(h, kind, start, authorize)}
}

// listRoute answers with what list returns.
func listRoute[T any](h *handler, pattern, summary string, access *Access, list func(context.Context) (T, error)) route {
	return route{pattern: pattern, summary: summary, reply: reflect.TypeFor[T](), success: ok, access: access, serve: listing(h, list)}
}

// nameRoute answers with what call returns for the {name} of the path.
func nameRoute[T any](h *handler, pattern, summary string, access *Access, status int, call func(context.Context, string) (T, error), failures map[int]string) route {
	return route{pattern: pattern, summary: summary, reply: reflect.TypeFor[T](), success: map[int]string{status: http.StatusText(status)},
		failures: failures, access: access, serve: byName(h, status, call)}
}

func logsRoute(h *handler, pattern, summary string, access *Access, write func(context.Context, string, io.Writer) error) route {
	return route{pattern: pattern, summary: summary, media: mediaNDJSON, success: ok, failures: notFound, access: access, serve: logs(h, write)}
}

func noteRoute(h *handler, pattern, summary, msg string, call func(context.Context, string, string) (*starter.ScheduleView, error)) route {
	return route{pattern: pattern, summary: summary, reply: reflect.TypeFor[*starter.ScheduleView](), success: ok, failures: notFound,
		query:  map[string]string{"note": "why, shown next to the schedule in Temporal"},
		access: on("update", v1alpha1.ResourceSchedules), serve: h.withNote(msg, call)}
}

// typeOf is the type of f's first result.
func typeOf(f any) reflect.Type { return reflect.TypeOf(f).Out(0) }

func merge(all ...map[int]string) map[int]string {
	out := map[int]string{}
	for _, m := range all {
		maps.Copy(out, m)
	}
	return out
}
