package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/internal/metrics"
	"github.com/cairn-backup/cairn/workflows"
)

// maxRequestBytes bounds a request body; a spec is a few KiB at most.
const maxRequestBytes = 1 << 20

// Handler serves the HTTP starter API:
//
//	POST /v1/backups                 create (201; 200 when it already exists)
//	GET  /v1/backups                 list
//	GET  /v1/backups/{name}          status
//	POST /v1/backups/{name}/cancel   cancel a running backup
//	GET  /v1/backups/{name}/logs     the backup's log, JSON lines
//	DELETE /v1/backups/{name}        delete its data (202); ?cancel=true cancels a running one first
//	POST /v1/restores                create (201; 200 when it already exists)
//	GET  /v1/restores                list
//	GET  /v1/restores/{name}         status
//	POST /v1/restores/{name}/cancel  cancel a running restore
//	GET  /v1/restores/{name}/logs    the restore's log, JSON lines
//	GET  /v1/restores/{name}/results every item's outcome of a finished restore
//	POST /v1/schedules               create a backup schedule (201; 409 when the name is taken)
//	GET  /v1/schedules               list, with each schedule's health
//	GET  /v1/schedules/{name}        spec, next runs, running and finished runs, health
//	PUT  /v1/schedules/{name}        replace the spec
//	DELETE /v1/schedules/{name}      delete the schedule (its backups stay)
//	POST /v1/schedules/{name}/pause    ?note=why
//	POST /v1/schedules/{name}/unpause  ?note=why
//	POST /v1/schedules/{name}/trigger  run now (202; 409 when overlap skip drops it)
//	POST /v1/etcd-snapshots          take an etcd snapshot (201; 200 when it already exists)
//	GET  /v1/etcd-snapshots          list
//	GET  /v1/etcd-snapshots/{name}   status: size, revision, sha256, verified
//	DELETE /v1/etcd-snapshots/{name} delete it (202)
//	GET  /metrics                    Prometheus: runs by phase, durations, items, bytes, schedules' health
//	GET  /healthz                    Temporal reachable
//
// Errors are JSON: {"error": "...", "type": "Invalid|Conflict|NotFound|...", "problems": [...]}.
func Handler(c *Client, log *zap.Logger) http.Handler {
	h := &handler{c: c, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/backups", create(h, "backup", c.CreateBackup))
	mux.HandleFunc("GET /v1/backups", listing(h, c.ListBackups))
	mux.HandleFunc("GET /v1/backups/{name}", byName(h, http.StatusOK, c.GetBackup))
	mux.HandleFunc("POST /v1/backups/{name}/cancel", byName(h, http.StatusAccepted, announced(h, "Backup cancel requested", c.CancelBackup)))
	mux.HandleFunc("GET /v1/backups/{name}/logs", logs(h, c.BackupLogs))
	mux.HandleFunc("DELETE /v1/backups/{name}", h.deleteBackup)
	mux.HandleFunc("POST /v1/restores", create(h, "restore", c.CreateRestore))
	mux.HandleFunc("GET /v1/restores", listing(h, c.ListRestores))
	mux.HandleFunc("GET /v1/restores/{name}", byName(h, http.StatusOK, c.GetRestore))
	mux.HandleFunc("POST /v1/restores/{name}/cancel", byName(h, http.StatusAccepted, announced(h, "Restore cancel requested", c.CancelRestore)))
	mux.HandleFunc("GET /v1/restores/{name}/logs", logs(h, c.RestoreLogs))
	mux.HandleFunc("GET /v1/restores/{name}/results", byName(h, http.StatusOK, c.RestoreResults))
	mux.HandleFunc("POST /v1/schedules", create(h, "schedule", c.CreateSchedule))
	mux.HandleFunc("GET /v1/schedules", listing(h, c.ListSchedules))
	mux.HandleFunc("GET /v1/schedules/{name}", byName(h, http.StatusOK, c.GetSchedule))
	mux.HandleFunc("PUT /v1/schedules/{name}", h.updateSchedule)
	mux.HandleFunc("DELETE /v1/schedules/{name}", byName(h, http.StatusOK, announced(h, "Schedule deleted", c.DeleteSchedule)))
	mux.HandleFunc("POST /v1/schedules/{name}/pause", h.withNote("Schedule paused", c.PauseSchedule))
	mux.HandleFunc("POST /v1/schedules/{name}/unpause", h.withNote("Schedule unpaused", c.UnpauseSchedule))
	mux.HandleFunc("POST /v1/schedules/{name}/trigger", byName(h, http.StatusAccepted, announced(h, "Schedule triggered", c.TriggerSchedule)))
	mux.HandleFunc("POST /v1/etcd-snapshots", create(h, "etcd snapshot", c.CreateEtcdSnapshot))
	mux.HandleFunc("GET /v1/etcd-snapshots", listing(h, c.ListEtcdSnapshots))
	mux.HandleFunc("GET /v1/etcd-snapshots/{name}", byName(h, http.StatusOK, c.GetEtcdSnapshot))
	mux.HandleFunc("DELETE /v1/etcd-snapshots/{name}", byName(h, http.StatusAccepted, announced(h, "etcd snapshot deletion started", c.DeleteEtcdSnapshot)))
	schedules := prometheus.NewRegistry()
	schedules.MustRegister(newScheduleCollector(c, log))
	mux.Handle("GET /metrics", metrics.Handler(schedules))
	mux.HandleFunc("GET /healthz", h.healthz)
	return mux
}

type handler struct {
	c   *Client
	log *zap.Logger
}

type errorBody struct {
	Error    string   `json:"error"`
	Type     string   `json:"type"`
	Problems []string `json:"problems,omitempty"`
}

// decodeStrict decodes a request body; an unknown field is a typo, not
// something to ignore.
func decodeStrict(r *http.Request, kind string, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &InvalidError{Problems: []string{fmt.Sprintf("request body is not a valid %s spec: %v", kind, err)}}
	}
	return nil
}

// create decodes a request body strictly (an unknown field is a typo, not
// something to ignore) and starts what it asks for.
func create[R any](h *handler, kind string, start func(context.Context, R) (*CreateResult, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req R
		if err := decodeStrict(r, kind, &req); err != nil {
			h.fail(w, r, err)
			return
		}
		res, err := start(r.Context(), req)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		status := http.StatusOK
		if res.Created {
			status = http.StatusCreated
			h.log.Info("Started", zap.String(kind, res.Name), zap.String("runId", res.RunID))
		}
		h.reply(w, status, res)
	}
}

func listing[T any](h *handler, list func(context.Context) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := list(r.Context())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.reply(w, http.StatusOK, v)
	}
}

// byName answers with what call returns for the {name} of the path.
func byName[T any](h *handler, status int, call func(context.Context, string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := call(r.Context(), r.PathValue("name"))
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.reply(w, status, v)
	}
}

// announced logs each successful call of a request that changes state.
func announced[T any](h *handler, msg string, call func(context.Context, string) (T, error)) func(context.Context, string) (T, error) {
	return func(ctx context.Context, name string) (T, error) {
		v, err := call(ctx, name)
		if err == nil {
			h.log.Info(msg, zap.String("name", name))
		}
		return v, err
	}
}

// logs streams a run's log as JSON lines, buffered so a failure can still
// become a JSON error with its status.
func logs(h *handler, write func(context.Context, string, io.Writer) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		if err := write(r.Context(), r.PathValue("name"), &buf); err != nil {
			h.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = buf.WriteTo(w)
	}
}

func (h *handler) deleteBackup(w http.ResponseWriter, r *http.Request) {
	res, err := h.c.DeleteBackup(r.Context(), r.PathValue("name"), r.URL.Query().Get("cancel") == "true")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("Backup deletion started", zap.String("backup", res.Name), zap.String("runId", res.RunID))
	h.reply(w, http.StatusAccepted, res)
}

func (h *handler) updateSchedule(w http.ResponseWriter, r *http.Request) {
	var spec workflows.ScheduleSpec
	if err := decodeStrict(r, "schedule", &spec); err != nil {
		h.fail(w, r, err)
		return
	}
	v, err := h.c.UpdateSchedule(r.Context(), r.PathValue("name"), spec)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("Schedule updated", zap.String("schedule", v.Name))
	h.reply(w, http.StatusOK, v)
}

// withNote calls a state change of the {name} schedule with the request's
// ?note=, which Temporal shows next to the schedule.
func (h *handler) withNote(msg string, call func(context.Context, string, string) (*ScheduleView, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := call(r.Context(), r.PathValue("name"), r.URL.Query().Get("note"))
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.log.Info(msg, zap.String("schedule", v.Name))
		h.reply(w, http.StatusOK, v)
	}
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	if _, err := h.c.temporal.CheckHealth(r.Context(), nil); err != nil {
		h.reply(w, http.StatusServiceUnavailable, errorBody{Error: "Temporal is not reachable: " + err.Error(), Type: "Unavailable"})
		return
	}
	h.reply(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := HTTPStatus(err)
	body := errorBody{Error: err.Error(), Type: ErrorType(err)}
	var invalid *InvalidError
	if errors.As(err, &invalid) {
		body.Problems = invalid.Problems
	}
	if status >= 500 {
		h.log.Error("Request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
	}
	h.reply(w, status, body)
}

func (h *handler) reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
