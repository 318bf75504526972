package hooks

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// tail is a writer that keeps the last max bytes written to it.
type tail struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.truncated = true
	}
	return len(p), nil
}

// String is the kept bytes, marked when earlier ones were dropped, with
// no broken character at the start.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if !t.truncated {
		return s
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "…" + strings.TrimLeft(s, "\n")
}
