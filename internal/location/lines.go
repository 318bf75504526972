package location

import (
	"bufio"
	"errors"
	"io"
)

// lineReader returns lines of any length without a fixed token limit
// (Kubernetes objects can be larger than bufio.Scanner's default).
type lineReader struct {
	r *bufio.Reader
	// reuse: a line is only valid until the next one is read, so one that
	// fits the reader's buffer is returned from it, and a longer one from
	// long, kept for the next. Otherwise every line is a copy of its own.
	reuse bool
	long  []byte
}

func newLineReader(r io.Reader, reuse bool) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10), reuse: reuse}
}

func (l *lineReader) next() ([]byte, error) {
	var line []byte
	var err error
	if l.reuse {
		line, err = l.readSlice()
	} else {
		line, err = l.r.ReadBytes('\n')
	}
	if len(line) > 0 && line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	return line, err
}

func (l *lineReader) readSlice() ([]byte, error) {
	line, err := l.r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	l.long = append(l.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = l.r.ReadSlice('\n')
		l.long = append(l.long, line...)
	}
	return l.long, err
}
