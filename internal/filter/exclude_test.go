package filter

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExcludedByLabel(t *testing.T) {
	assert.Equal(t, "cairn.io/exclude-from-backup", ExcludedBy(map[string]string{"cairn.io/exclude-from-backup": "true"}))
	assert.Equal(t, "velero.io/exclude-from-backup", ExcludedBy(map[string]string{"velero.io/exclude-from-backup": "true", "app": "x"}))
	assert.Empty(t, ExcludedBy(map[string]string{"cairn.io/exclude-from-backup": "false"}), "only true excludes")
	assert.Empty(t, ExcludedBy(nil))
}
