package starter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.uber.org/zap"
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
//	POST /v1/restores                create (201; 200 when it already exists)
//	GET  /v1/restores                list
//	GET  /v1/restores/{name}         status
//	POST /v1/restores/{name}/cancel  cancel a running restore
//	GET  /v1/restores/{name}/logs    the restore's log, JSON lines
//	GET  /v1/restores/{name}/results every item's outcome of a finished restore
//	GET  /healthz                    Temporal reachable
//
// Errors are JSON: {"error": "...", "type": "Invalid|Conflict|NotFound|...", "problems": [...]}.
func Handler(c *Client, log *zap.Logger) http.Handler {
	h := &handler{c: c, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/backups", h.createBackup)
	mux.HandleFunc("GET /v1/backups", h.listBackups)
	mux.HandleFunc("GET /v1/backups/{name}", h.getBackup)
	mux.HandleFunc("POST /v1/backups/{name}/cancel", h.cancelBackup)
	mux.HandleFunc("GET /v1/backups/{name}/logs", h.backupLogs)
	mux.HandleFunc("POST /v1/restores", h.createRestore)
	mux.HandleFunc("GET /v1/restores", h.listRestores)
	mux.HandleFunc("GET /v1/restores/{name}", h.getRestore)
	mux.HandleFunc("POST /v1/restores/{name}/cancel", h.cancelRestore)
	mux.HandleFunc("GET /v1/restores/{name}/logs", h.restoreLogs)
	mux.HandleFunc("GET /v1/restores/{name}/results", h.restoreResults)
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

func (h *handler) createBackup(w http.ResponseWriter, r *http.Request) {
	var req CreateBackupRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		h.fail(w, r, &InvalidError{Problems: []string{fmt.Sprintf("request body is not a valid backup spec: %v", err)}})
		return
	}
	res, err := h.c.CreateBackup(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		h.log.Info("Backup started", zap.String("backup", res.Name), zap.String("runId", res.RunID))
	}
	h.reply(w, status, res)
}

func (h *handler) listBackups(w http.ResponseWriter, r *http.Request) {
	list, err := h.c.ListBackups(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, list)
}

func (h *handler) getBackup(w http.ResponseWriter, r *http.Request) {
	v, err := h.c.GetBackup(r.Context(), r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, v)
}

func (h *handler) cancelBackup(w http.ResponseWriter, r *http.Request) {
	v, err := h.c.CancelBackup(r.Context(), r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("Backup cancel requested", zap.String("backup", v.Name))
	h.reply(w, http.StatusAccepted, v)
}

func (h *handler) backupLogs(w http.ResponseWriter, r *http.Request) {
	// Buffered so a failure can still become a JSON error with its status.
	var buf bytes.Buffer
	if err := h.c.BackupLogs(r.Context(), r.PathValue("name"), &buf); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	_, _ = buf.WriteTo(w)
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
