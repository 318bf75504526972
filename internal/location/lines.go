package location

import (
	"bufio"
	"io"
)

// lineReader returns lines of any length without a fixed token limit
// (Kubernetes objects can be larger than bufio.Scanner's default).
type lineReader struct{ r *bufio.Reader }

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: bufio.NewReaderSize(r, 256<<10)} }

func (l *lineReader) next() ([]byte, error) {
	line, err := l.r.ReadBytes('\n')
	if len(line) > 0 && line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	return line, err
}
