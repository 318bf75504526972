package kopiarepo

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kopia's Azure storage goes where the location's URL says, not to the
// public cloud's domain, and refuses an emulator it cannot address.
func TestAzureOptionsFollowTheURL(t *testing.T) {
	env := func(name string) string {
		return map[string]string{"AZURE_STORAGE_ACCOUNT": "acct", "AZURE_STORAGE_KEY": "k"}[name]
	}
	u, err := url.Parse("azblob://backups?domain=blob.core.chinacloudapi.cn&protocol=https")
	require.NoError(t, err)
	opts, err := azureOptions(u, "kopia/", env)
	require.NoError(t, err)
	assert.Equal(t, "backups", opts.Container)
	assert.Equal(t, "acct", opts.StorageAccount)
	assert.Equal(t, "blob.core.chinacloudapi.cn", opts.StorageDomain)
	assert.False(t, opts.DoNotUseTLS)

	for _, raw := range []string{
		"azblob://backups?localemu=true&domain=127.0.0.1:10000&protocol=http",
		"azblob://backups?domain=127.0.0.1:10000&protocol=http",
		"azblob://backups?domain=localhost:10000&protocol=http",
	} {
		u, err = url.Parse(raw)
		require.NoError(t, err)
		_, err = azureOptions(u, "kopia/", env)
		assert.ErrorContains(t, err, "local Azure emulator location addressed by path", raw)
	}

	// An emulator addressed as a real account is: by host name.
	u, err = url.Parse("azblob://backups?domain=blob.localhost:10000&protocol=http")
	require.NoError(t, err)
	opts, err = azureOptions(u, "kopia/", env)
	require.NoError(t, err)
	assert.Equal(t, "blob.localhost:10000", opts.StorageDomain)
	assert.True(t, opts.DoNotUseTLS)
}
