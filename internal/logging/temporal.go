package logging

import (
	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
)

// TemporalLogger adapts zap to the Temporal SDK's key-value logger.
type TemporalLogger struct{ s *zap.SugaredLogger }

var _ log.Logger = (*TemporalLogger)(nil)

// NewTemporalLogger wraps l for the SDK.
func NewTemporalLogger(l *zap.Logger) *TemporalLogger {
	return &TemporalLogger{s: l.WithOptions(zap.AddCallerSkip(1)).Sugar()}
}

func (t *TemporalLogger) Debug(msg string, kv ...any) { t.s.Debugw(msg, kv...) }
func (t *TemporalLogger) Info(msg string, kv ...any)  { t.s.Infow(msg, kv...) }
func (t *TemporalLogger) Warn(msg string, kv ...any)  { t.s.Warnw(msg, kv...) }
func (t *TemporalLogger) Error(msg string, kv ...any) { t.s.Errorw(msg, kv...) }

// With returns a logger with kv on every line.
func (t *TemporalLogger) With(kv ...any) log.Logger { return &TemporalLogger{s: t.s.With(kv...)} }
