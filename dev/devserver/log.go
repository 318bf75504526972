package devserver

import (
	"fmt"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ignoredNotices are server warnings that say nothing to a dev-server user.
var ignoredNotices = []string{
	// The frontend HTTP API (used by Nexus) is deliberately off.
	"HTTP API port has not been set",
}

// serverLog shapes the Temporal server's logging: warn level and above,
// without the ignored notices, silent from the moment Stop begins (the
// server's shutdown and its leftover reconnecting clients log dozens of
// expected "connection refused" and "context canceled" lines), and with a
// fatal log that panics while the server is being built and started, so
// that Start can return it as an error instead of the process exiting.
type serverLog struct {
	muted    atomic.Bool
	starting atomic.Bool
}

// logger derives the server's logger from base.
func (sl *serverLog) logger(base *zap.Logger) *zap.Logger {
	return base.Named("temporal").WithOptions(
		zap.IncreaseLevel(zapcore.WarnLevel),
		zap.WrapCore(func(c zapcore.Core) zapcore.Core { return quietCore{Core: c, log: sl} }),
		zap.WithFatalHook(sl),
	)
}

// OnWrite implements zapcore.CheckWriteHook for fatal entries.
func (sl *serverLog) OnWrite(ce *zapcore.CheckedEntry, fields []zapcore.Field) {
	if !sl.starting.Load() {
		zapcore.WriteThenFatal.OnWrite(ce, fields)
		return
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	delete(enc.Fields, "logging-call-at")
	panic(fmt.Sprintf("%s %v", ce.Message, enc.Fields))
}

// quietCore drops what serverLog filters out.
type quietCore struct {
	zapcore.Core
	log *serverLog
}

// silenced reports whether entries at l are muted. Fatal and panic
// entries never are: the server relies on them not returning.
func (c quietCore) silenced(l zapcore.Level) bool {
	return l < zapcore.DPanicLevel && c.log.muted.Load()
}

func (c quietCore) Enabled(l zapcore.Level) bool {
	return !c.silenced(l) && c.Core.Enabled(l)
}

func (c quietCore) With(fields []zapcore.Field) zapcore.Core {
	return quietCore{Core: c.Core.With(fields), log: c.log}
}

func (c quietCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.silenced(e.Level) {
		return ce
	}
	for _, prefix := range ignoredNotices {
		if strings.HasPrefix(e.Message, prefix) {
			return ce
		}
	}
	return c.Core.Check(e, ce)
}
