package location

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A credentials directory laid out as a mounted Secret: each key a link
// into ..data, which holds the files.
func secretDir(t *testing.T, vars map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_11_25_00_00_00.000")
	require.NoError(t, os.Mkdir(data, 0o700))
	require.NoError(t, os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")))
	for k, v := range vars {
		require.NoError(t, os.WriteFile(filepath.Join(data, k), []byte(v), 0o600))
		require.NoError(t, os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)))
	}
	return dir
}

func TestALocationReadsItsOwnCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "process-key")
	dir := secretDir(t, map[string]string{"AWS_ACCESS_KEY_ID": "offsite-key\n", "AWS_SECRET_ACCESS_KEY": "offsite-secret"})
	o := &Opener{CredentialDirs: map[string]string{"s3://offsite?region=us-east-1": dir}}

	env, err := o.Env("s3://offsite?region=us-east-1")
	require.NoError(t, err)
	assert.Equal(t, "offsite-key", env("AWS_ACCESS_KEY_ID"), "the file's value, its newline dropped")
	assert.Equal(t, "offsite-secret", env("AWS_SECRET_ACCESS_KEY"))
	assert.Empty(t, env("AWS_SESSION_TOKEN"), "nothing from the process environment")
	assert.Empty(t, env("..data"))

	env, err = o.Env("s3://other?region=us-east-1")
	require.NoError(t, err)
	assert.Equal(t, "process-key", env("AWS_ACCESS_KEY_ID"), "a location without its own: the environment")
	env, err = (*Opener)(nil).Env("s3://offsite?region=us-east-1")
	require.NoError(t, err)
	assert.Equal(t, "process-key", env("AWS_ACCESS_KEY_ID"))

	// A rotated Secret is read on the next open.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "AWS_SECRET_ACCESS_KEY"), []byte("rotated"), 0o600))
	env, err = o.Env("s3://offsite?region=us-east-1")
	require.NoError(t, err)
	assert.Equal(t, "rotated", env("AWS_SECRET_ACCESS_KEY"))
}

func TestCredentialsThatCannotBeRead(t *testing.T) {
	o := &Opener{CredentialDirs: map[string]string{"s3://offsite": filepath.Join(t.TempDir(), "missing")}}
	_, err := o.Env("s3://offsite")
	assert.Error(t, err)

	big := secretDir(t, map[string]string{"AWS_SECRET_ACCESS_KEY": string(make([]byte, maxCredentialFile+1))})
	o = &Opener{CredentialDirs: map[string]string{"s3://offsite": big}}
	_, err = o.Env("s3://offsite")
	assert.ErrorContains(t, err, "larger than")

	empty := secretDir(t, map[string]string{"AWS_REGION": "us-east-1"})
	o = &Opener{CredentialDirs: map[string]string{"s3://offsite?region=us-east-1": empty}}
	_, err = o.Open(t.Context(), "s3://offsite?region=us-east-1")
	assert.ErrorContains(t, err, "no AWS_ACCESS_KEY_ID")
}
