package location

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCatalogImmutableLocations(t *testing.T) {
	c, err := ParseCatalog("/tmp/loc", []string{
		"vault=s3://vault?region=us-east-1;immutable=30d",
		"gov=s3://gov;immutable=720h;lock-mode=governance",
	}, false)
	require.NoError(t, err)
	locks := c.Locks()
	require.Len(t, locks, 2)
	vault, _ := c.Resolve("vault", true)
	gov, _ := c.Resolve("gov", true)
	assert.Equal(t, Lock{Period: 30 * 24 * time.Hour, Mode: LockCompliance}, locks[vault], "compliance unless told")
	assert.Equal(t, Lock{Period: 30 * 24 * time.Hour, Mode: LockGovernance}, locks[gov])
	assert.Equal(t, "30d governance", locks[gov].String())
	o := Opener{Locks: locks}
	assert.Nil(t, o.Lock("/tmp/loc"))
	assert.Equal(t, LockCompliance, o.Lock("s3://vault?region=us-east-1").Mode)

	for spec, want := range map[string]string{
		"a=file:///tmp/x;immutable=30d":          "needs S3 Object Lock",
		"a=s3://b;immutable=1d":                  "at least 2d",
		"a=s3://b;immutable=thirty":              "want days",
		"a=s3://b;immutable=30d;lock-mode=legal": "want compliance or governance",
		"a=s3://b;lock-mode=governance":          "lock-mode goes with immutable",
		"a=s3://b;readonly;immutable=30d":        "read-only location writes nothing",
	} {
		_, err := ParseCatalog("/tmp/loc", []string{spec}, false)
		assert.ErrorContains(t, err, want, spec)
	}
}

func TestOnlyTheObjectsOfAFinishedBackupAreLocked(t *testing.T) {
	keys := Backup("b1")
	for _, key := range append(keys.Stored(), keys.Metadata(), keys.Manifest()) {
		assert.True(t, locked(key), key)
	}
	for _, key := range []string{keys.Plan(), keys.Part("configmaps", 0, 1), keys.LogsPrefix() + "0001.jsonl", "restores/r1/restore.json",
		"backups/backup.json", "kopia/p0123", "backups/b1/nested/backup.json"} {
		assert.False(t, locked(key), key)
	}
}
