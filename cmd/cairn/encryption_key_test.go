package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEncryptionKeyGenerateAndID(t *testing.T) {
	out, err := execute("encryption-key", "generate")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.True(t, strings.HasPrefix(lines[1], "AGE-SECRET-KEY-PQ-1"))
	id := strings.TrimPrefix(lines[0], "# cairn encryption key ")

	path := filepath.Join(t.TempDir(), "key.txt")
	require.NoError(t, os.WriteFile(path, []byte(out), 0o600))
	printed, err := execute("encryption-key", "id", path)
	require.NoError(t, err)
	assert.Equal(t, id+"\n", printed, "the comment names the key's ID")
	printed, err = execute("encryption-key", "id", "--encryption-key", path)
	require.NoError(t, err)
	assert.Equal(t, id+"\n", printed)

	_, err = execute("encryption-key", "id", "--data-dir", t.TempDir())
	var usage *usageError
	assert.ErrorAs(t, err, &usage)
	_, err = execute("encryption-key", "id", filepath.Join(t.TempDir(), "missing"))
	assert.ErrorAs(t, err, &usage)
}
