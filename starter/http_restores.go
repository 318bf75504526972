package starter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"go.uber.org/zap"
)

func (h *handler) createRestore(w http.ResponseWriter, r *http.Request) {
	var req CreateRestoreRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		h.fail(w, r, &InvalidError{Problems: []string{fmt.Sprintf("request body is not a valid restore spec: %v", err)}})
		return
	}
	res, err := h.c.CreateRestore(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		h.log.Info("Restore started", zap.String("restore", res.Name), zap.String("backup", req.BackupName),
			zap.String("runId", res.RunID))
	}
	h.reply(w, status, res)
}

func (h *handler) listRestores(w http.ResponseWriter, r *http.Request) {
	list, err := h.c.ListRestores(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, list)
}

func (h *handler) getRestore(w http.ResponseWriter, r *http.Request) {
	v, err := h.c.GetRestore(r.Context(), r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, v)
}

func (h *handler) cancelRestore(w http.ResponseWriter, r *http.Request) {
	v, err := h.c.CancelRestore(r.Context(), r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("Restore cancel requested", zap.String("restore", v.Name))
	h.reply(w, http.StatusAccepted, v)
}

func (h *handler) restoreLogs(w http.ResponseWriter, r *http.Request) {
	// Buffered so a failure can still become a JSON error with its status.
	var buf bytes.Buffer
	if err := h.c.RestoreLogs(r.Context(), r.PathValue("name"), &buf); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	_, _ = buf.WriteTo(w)
}

func (h *handler) restoreResults(w http.ResponseWriter, r *http.Request) {
	res, err := h.c.RestoreResults(r.Context(), r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.reply(w, http.StatusOK, res)
}
