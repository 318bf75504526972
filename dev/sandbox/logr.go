package sandbox

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// controller-runtime (envtest) logs through one process-wide logr logger,
// and prints a stack trace to stderr if it first logs more than 30 s after
// the process started without one set. The sandbox sets one (controller-
// runtime keeps the first it is given, so a program's own wins) that writes
// to the logger of the most recently started cluster, and to nothing once
// that cluster stopped: a test's logger is never used after its test.
var (
	ctrlLogOnce sync.Once
	ctrlLog     atomic.Pointer[zap.Logger]
)

func useControllerRuntimeLogger(log *zap.Logger) {
	ctrlLogOnce.Do(func() { ctrllog.SetLogger(logr.New(zapSink{})) })
	ctrlLog.Store(log)
}

func releaseControllerRuntimeLogger(log *zap.Logger) {
	ctrlLog.CompareAndSwap(log, nil)
}

// zapSink is a minimal logr.LogSink over the current zap logger: V(0) is
// Info, higher is Debug.
type zapSink struct {
	names  []string
	fields []zap.Field
}

func (s zapSink) logger() *zap.Logger {
	l := ctrlLog.Load()
	if l == nil {
		return nil
	}
	for _, n := range s.names {
		l = l.Named(n)
	}
	return l.With(s.fields...)
}

func (s zapSink) Init(logr.RuntimeInfo) {}

func (s zapSink) Enabled(level int) bool {
	l := ctrlLog.Load()
	return l != nil && l.Core().Enabled(zapLevel(level))
}

func (s zapSink) Info(level int, msg string, kv ...any) {
	if l := s.logger(); l != nil {
		if ce := l.Check(zapLevel(level), msg); ce != nil {
			ce.Write(zapFields(kv)...)
		}
	}
}

func (s zapSink) Error(err error, msg string, kv ...any) {
	if l := s.logger(); l != nil {
		l.Error(msg, append(zapFields(kv), zap.Error(err))...)
	}
}

func (s zapSink) WithValues(kv ...any) logr.LogSink {
	s.fields = append(s.fields[:len(s.fields):len(s.fields)], zapFields(kv)...)
	return s
}

func (s zapSink) WithName(name string) logr.LogSink {
	s.names = append(s.names[:len(s.names):len(s.names)], name)
	return s
}

func zapLevel(v int) zapcore.Level {
	if v <= 0 {
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

func zapFields(kv []any) []zap.Field {
	fields := make([]zap.Field, 0, (len(kv)+1)/2)
	for i := 0; i < len(kv); i += 2 {
		key, ok := kv[i].(string)
		if !ok {
			key = fmt.Sprint(kv[i])
		}
		if i+1 == len(kv) {
			fields = append(fields, zap.Any("!BADKEY", key))
			break
		}
		fields = append(fields, zap.Any(key, kv[i+1]))
	}
	return fields
}
