package logging

import (
	"bytes"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Capture is a logger for one run (one activity attempt of one backup)
// that writes to the process log and keeps a JSON copy of its lines, which
// the activity stores in the backup location when it ends.
type Capture struct {
	Logger *zap.Logger
	mu     sync.Mutex
	buf    bytes.Buffer
}

// NewCapture returns a capture whose lines carry fields (for example the
// backup name) and go to base as well.
func NewCapture(base *zap.Logger, fields ...zap.Field) *Capture {
	c := &Capture{}
	tee := zapcore.NewTee(base.Core(), zapcore.NewCore(zapcore.NewJSONEncoder(EncoderConfig()), zapcore.AddSync(c), zapcore.InfoLevel))
	c.Logger = zap.New(tee).With(fields...)
	return c
}

// Write implements zapcore.WriteSyncer for the captured copy.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// Sync implements zapcore.WriteSyncer.
func (c *Capture) Sync() error { return nil }

// Bytes returns the captured JSON lines so far.
func (c *Capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf.Bytes()...)
}
