package kopiarepo

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// opsRecorder records a copy's writes and seeks.
type opsRecorder struct{ ops []string }

func (r *opsRecorder) Write(p []byte) (int, error) {
	r.ops = append(r.ops, fmt.Sprintf("write %d", len(p)))
	return len(p), nil
}

func (r *opsRecorder) Seek(offset int64, whence int) (int64, error) {
	if whence != io.SeekCurrent {
		return 0, fmt.Errorf("seek whence %d", whence)
	}
	r.ops = append(r.ops, fmt.Sprintf("seek %d", offset))
	return 0, nil
}

// TestSparseCopyWritesRunsWholeAndSeeksOverHoles: a run of data blocks is
// one write, a run of zero blocks one seek, whatever the blocks' number.
func TestSparseCopyWritesRunsWholeAndSeeksOverHoles(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 3*holeBlock)
	data = append(data, make([]byte, 2*holeBlock)...)
	data = append(data, bytes.Repeat([]byte{1}, holeBlock+10)...) // the last block is partly data
	data = append(data, make([]byte, holeBlock-10+100)...)        // a zero tail shorter than a block
	var rec opsRecorder
	var progressed int64
	require.NoError(t, sparseCopy(&rec, bytes.NewReader(data), func(n int64) { progressed += n }))
	assert.Equal(t, []string{
		fmt.Sprintf("write %d", 3*holeBlock),
		fmt.Sprintf("seek %d", 2*holeBlock),
		fmt.Sprintf("write %d", 2*holeBlock),
		"seek 100",
	}, rec.ops)
	assert.EqualValues(t, len(data), progressed, "every byte read is reported")
}

// TestSparseCopyWritesAMiBAtOnce: data is written in chunks of copyChunk,
// not a filesystem block at a time.
func TestSparseCopyWritesAMiBAtOnce(t *testing.T) {
	data := bytes.Repeat([]byte{9}, 2*copyChunk+5)
	var rec opsRecorder
	require.NoError(t, sparseCopy(&rec, bytes.NewReader(data), nil))
	assert.Equal(t, []string{
		fmt.Sprintf("write %d", copyChunk), fmt.Sprintf("write %d", copyChunk), "write 5",
	}, rec.ops)
}
