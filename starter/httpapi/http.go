package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/metrics"
	"github.com/cairn-backup/cairn/starter"
)

// maxRequestBytes bounds a request body; a spec is a few KiB at most.
const maxRequestBytes = 1 << 20

// Handler serves the HTTP starter API. GET /openapi.json describes every
// route (routes.go holds the table); errors are JSON:
// {"error": "...", "type": "Invalid|Conflict|NotFound|...", "problems": [...]}.
// Every route but auth's anonymous paths needs a bearer token whose user
// auth allows the route's access. Bodies must be JSON, and cross-site
// requests from browsers are refused.
func Handler(c *starter.Client, log *zap.Logger, auth Auth) http.Handler {
	h := newHandler(c, log)
	h.auth = auth
	mux := http.NewServeMux()
	for _, r := range h.routes() {
		mux.HandleFunc(r.pattern, h.guarded(r))
	}
	return browserGuard(mux)
}

type handler struct {
	c       *starter.Client
	log     *zap.Logger
	auth    Auth
	metrics http.Handler
	// doc is the OpenAPI document of the routes, made once.
	doc    []byte
	docErr error
}

func newHandler(c *starter.Client, log *zap.Logger) *handler {
	if log == nil {
		log = zap.NewNop()
	}
	schedules := prometheus.NewRegistry()
	schedules.MustRegister(newScheduleCollector(c, log))
	h := &handler{c: c, log: log, metrics: metrics.Handler(schedules)}
	h.doc, h.docErr = openAPIDocument(h.routes())
	return h
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
		return &starter.InvalidError{Problems: []string{fmt.Sprintf("request body is not a valid %s spec: %v", kind, err)}}
	}
	return nil
}

// create decodes a request body strictly (an unknown field is a typo, not
// something to ignore), authorizes it when authorize is set, and starts
// what it asks for.
func create[R any](h *handler, kind string, start func(context.Context, R) (*starter.CreateResult, error), authorize func(context.Context, *R) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req R
		if decodeAuthorized(h, w, r, kind, &req, authorize) {
			startRun(h, w, r, kind, start, req)
		}
	}
}

// createOrDryRun is create for a kind that also answers dry runs: a
// body that asks for one (dry) gets the dry run's report, 200, and starts
// nothing.
func createOrDryRun[R, D any](h *handler, kind string, start func(context.Context, R) (*starter.CreateResult, error),
	dryRun func(context.Context, R) (D, error), dry func(R) bool, authorize func(context.Context, *R) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req R
		if !decodeAuthorized(h, w, r, kind, &req, authorize) {
			return
		}
		if !dry(req) {
			startRun(h, w, r, kind, start, req)
			return
		}
		// The answer comes when the dry run ends, which over a big
		// namespace takes a while: the server's write timeout, which
		// bounds every other answer, does not apply.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		report, err := dryRun(r.Context(), req)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.reply(w, http.StatusOK, report)
	}
}

// decodeAuthorized decodes the body into req and asks authorize (if set)
// about it; when either fails it answers and returns false.
func decodeAuthorized[R any](h *handler, w http.ResponseWriter, r *http.Request, kind string, req *R, authorize func(context.Context, *R) error) bool {
	if err := decodeStrict(r, kind, req); err != nil {
		h.fail(w, r, err)
		return false
	}
	if authorize != nil {
		if err := authorize(r.Context(), req); err != nil {
			h.fail(w, r, err)
			return false
		}
	}
	return true
}

// startRun starts what req asks for and answers where it runs.
func startRun[R any](h *handler, w http.ResponseWriter, r *http.Request, kind string, start func(context.Context, R) (*starter.CreateResult, error), req R) {
	res, err := start(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		h.log.Info("Started", zap.String(kind, res.Name), zap.String("runId", res.RunID), zap.String("user", userName(r.Context())))
	}
	h.reply(w, status, res)
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
		v, err := call(r.Context(), pathName(r))
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

// logs streams a run's log as JSON lines, however long it is: nothing is
// held in memory. A failure before the first byte is a JSON error with
// its status; one after it cuts the response short, so the client sees
// an error rather than a log that merely looks complete.
func logs(h *handler, write func(context.Context, string, io.Writer) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sw := &streamStart{w: w, rc: http.NewResponseController(w)}
		// A log is streamed for as long as it takes: the server's write
		// timeout, which bounds every other answer, does not apply.
		_ = sw.rc.SetWriteDeadline(time.Time{})
		err := write(r.Context(), pathName(r), sw)
		switch {
		case err != nil && !sw.started:
			h.fail(w, r, err)
		case err != nil:
			h.log.Warn("Log download cut short", zap.String("path", r.URL.Path), zap.Error(err))
			panic(http.ErrAbortHandler)
		case !sw.started:
			sw.start()
		}
	}
}

// streamStart sends the success header with the first byte, and each
// write at once.
type streamStart struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func (s *streamStart) start() {
	s.w.Header().Set("Content-Type", mediaNDJSON)
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

func (s *streamStart) Write(p []byte) (int, error) {
	if !s.started {
		s.start()
	}
	n, err := s.w.Write(p)
	if err == nil {
		err = s.rc.Flush()
	}
	return n, err
}

func (h *handler) deleteBackup(w http.ResponseWriter, r *http.Request) {
	res, err := h.c.DeleteBackup(r.Context(), pathName(r), r.URL.Query().Get("cancel") == "true")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("Backup deletion started", zap.String("backup", res.Name), zap.String("runId", res.RunID))
	h.reply(w, http.StatusAccepted, res)
}

func (h *handler) verifyBackup(w http.ResponseWriter, r *http.Request) {
	// A verify answers when the verification workflow ends, which a full
	// one over large volumes takes long to: the server's write timeout,
	// which bounds every other answer, does not apply.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	res, err := h.c.VerifyBackup(r.Context(), pathName(r), r.URL.Query().Get("full") == "true")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("Backup verified", zap.String("backup", res.Backup), zap.Bool("ok", res.OK()), zap.Strings("differ", res.Differ))
	h.reply(w, http.StatusOK, res)
}

func (h *handler) updateSchedule(w http.ResponseWriter, r *http.Request) {
	var spec v1alpha1.ScheduleSpec
	if err := decodeStrict(r, "schedule", &spec); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.admitSchedule(r.Context(), r.PathValue("name"), &spec); err != nil {
		h.fail(w, r, err)
		return
	}
	v, err := h.c.UpdateSchedule(r.Context(), pathName(r), spec)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("Schedule updated", zap.String("schedule", v.Name))
	h.reply(w, http.StatusOK, v)
}

// withNote calls a state change of the {name} schedule with the request's
// ?note=, which Temporal shows next to the schedule.
func (h *handler) withNote(msg string, call func(context.Context, string, string) (*starter.ScheduleView, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := call(r.Context(), pathName(r), r.URL.Query().Get("note"))
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.log.Info(msg, zap.String("schedule", v.Name))
		h.reply(w, http.StatusOK, v)
	}
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	if err := h.c.CheckHealth(r.Context()); err != nil {
		h.reply(w, http.StatusServiceUnavailable, errorBody{Error: "Temporal is not reachable: " + err.Error(), Type: "Unavailable"})
		return
	}
	h.reply(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := starter.HTTPStatus(err)
	body := errorBody{Error: err.Error(), Type: starter.ErrorType(err)}
	var invalid *starter.InvalidError
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
