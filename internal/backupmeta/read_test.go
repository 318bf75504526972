package backupmeta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

const veleroJSON = `{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"%s"},
  "status":{"formatVersion":"1.1.0","phase":"Completed","progress":{"totalItems":3,"itemsBackedUp":3}}}`

func TestRead(t *testing.T) {
	ctx := context.Background()
	loc, err := location.OpenPlain(ctx, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	write := func(key, data string) { require.NoError(t, loc.WriteAll(ctx, key, []byte(data))) }

	write(location.Backup("old-cairn").Metadata(), `{"apiVersion":"cairn.dev/v1alpha1","kind":"Backup","name":"old-cairn","status":{"phase":"Completed"}}`)
	write(location.Backup("velero-only").VeleroMetadata(), veleroStr("velero-only"))
	// cairn's file wins when both tools wrote into one folder.
	write(location.Backup("both").Metadata(), `{"name":"both","format":"cairn","status":{"phase":"Failed"}}`)
	write(location.Backup("both").VeleroMetadata(), veleroStr("both"))
	write(location.Backup("empty").Results(), `{}`)
	write(location.Backup("bad-velero").VeleroMetadata(), `{"apiVersion":"velero.io/v1","kind":"Schedule","metadata":{"name":"bad-velero"}}`)
	write(location.Backup("renamed").VeleroMetadata(), veleroStr("other"))
	// An unreadable backup.json is reported, not papered over by Velero's.
	write(location.Backup("bad-cairn").Metadata(), `{`)
	write(location.Backup("bad-cairn").VeleroMetadata(), veleroStr("bad-cairn"))
	// A metadata file past the limit is not read whole.
	write(location.Backup("huge").Metadata(), `{"name":"huge","padding":"`+strings.Repeat("x", MaxMetadataBytes)+`"}`)

	meta, key, err := Read(ctx, loc, "old-cairn")
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupFormatCairn, meta.Format, "a backup.json without format is cairn's")
	assert.Equal(t, v1alpha1.PhaseCompleted, meta.Status.Phase)
	assert.Equal(t, "backups/old-cairn/resources.tar.gz", key)

	meta, key, err = Read(ctx, loc, "velero-only")
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupFormatVelero, meta.Format)
	assert.Equal(t, "velero-only", meta.Name)
	assert.Equal(t, v1alpha1.PhaseCompleted, meta.Status.Phase)
	assert.Equal(t, 3, meta.Status.ItemsDone)
	assert.Equal(t, "backups/velero-only/velero-only.tar.gz", key)

	meta, key, err = Read(ctx, loc, "both")
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.BackupFormatCairn, meta.Format)
	assert.Equal(t, v1alpha1.PhaseFailed, meta.Status.Phase)
	assert.Equal(t, "backups/both/resources.tar.gz", key)

	for _, name := range []string{"empty", "never-written"} {
		_, _, err = Read(ctx, loc, name)
		assert.True(t, errors.Is(err, location.ErrNotFound), "%s: %v", name, err)
	}

	for name, want := range map[string]string{
		"bad-velero": `backups/bad-velero/velero-backup.json: not a Velero backup`,
		"renamed":    `names backup "other", not "renamed"`,
		"bad-cairn":  `decode backups/bad-cairn/backup.json`,
		"huge":       `backups/huge/backup.json: larger than the limit of 4194304 bytes`,
	} {
		_, _, err = Read(ctx, loc, name)
		assert.ErrorContains(t, err, want, name)
		assert.False(t, errors.Is(err, location.ErrNotFound), name)
		assert.ErrorIs(t, err, ErrCorrupt, "%s: no retry reads it better", name)
	}
}

func veleroStr(name string) string { return fmt.Sprintf(veleroJSON, name) }
