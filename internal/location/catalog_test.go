package location

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCatalogResolvesNamesAndRefusesURLs(t *testing.T) {
	c, err := ParseCatalog("file:///var/lib/cairn/location", []string{"offsite=s3://backups/prod?region=us-east-1", "old=gs://archive;readonly"}, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"default", "offsite", "old"}, c.Names())

	url, err := c.Resolve("", true)
	require.NoError(t, err)
	assert.Equal(t, c.DefaultURL(), url, "no name: the default")
	assert.Contains(t, url, "file:///var/lib/cairn/location?")

	url, err = c.Resolve("offsite", true)
	require.NoError(t, err)
	assert.Equal(t, "s3://backups/prod?region=us-east-1", url)

	url, err = c.Resolve("s3://backups/prod?region=us-east-1", true)
	require.NoError(t, err, "a configured location's own URL is no escape")
	assert.Equal(t, "s3://backups/prod?region=us-east-1", url)

	for _, ref := range []string{"file:///tmp/evil-loc", "s3://attacker/bucket?endpoint=http://10.0.0.5", "mem://"} {
		_, err = c.Resolve(ref, false)
		assert.ErrorIs(t, err, ErrNotAllowed, ref)
		assert.ErrorContains(t, err, "configured: default, offsite, old", ref)
	}
	_, err = c.Resolve("elsewhere", false)
	assert.ErrorIs(t, err, ErrNotAllowed)
	assert.ErrorContains(t, err, `unknown location "elsewhere"`)

	_, err = c.Resolve("old", true)
	assert.ErrorIs(t, err, ErrNotAllowed, "nothing writes a read-only location")
	assert.ErrorContains(t, err, "location old is read-only")
	url, err = c.Resolve("old", false)
	require.NoError(t, err, "a read-only location is restored from")
	assert.Equal(t, "gs://archive", url)
	name, ro := c.ReadOnlyURL("gs://archive")
	assert.True(t, ro)
	assert.Equal(t, "old", name)
}

func TestCatalogTakesURLsOnlyWhenAllowed(t *testing.T) {
	c, err := ParseCatalog("mem://", nil, true)
	require.NoError(t, err)
	url, err := c.Resolve("/srv/backups", true)
	assert.ErrorIs(t, err, ErrNotAllowed, "a bare path is no URL: %s", url)
	url, err = c.Resolve("file:///srv/backups", true)
	require.NoError(t, err)
	assert.Contains(t, url, "file:///srv/backups?")
	_, err = c.Resolve("ftp://x/y", true)
	assert.ErrorContains(t, err, "unsupported scheme")
}

func TestCatalogRefusesBadEntries(t *testing.T) {
	for specs, want := range map[string]string{
		"Offsite=s3://b":         "lowercase letters",
		"a=s3://b|a=s3://c":      "given twice",
		"a":                      "want name=URL",
		"a=s3://b;writable":      `unknown option "writable"`,
		"a=ftp://b":              "unsupported scheme",
		"default=s3://elsewhere": "given twice",
	} {
		_, err := ParseCatalog("mem://", strings.Split(specs, "|"), false)
		assert.ErrorContains(t, err, want, specs)
	}
	_, err := ParseCatalog("", nil, false)
	assert.ErrorContains(t, err, "no default location")
}

func TestCatalogGivesLocationsTheirOwnCredentials(t *testing.T) {
	c, err := ParseCatalog("file:///var/lib/cairn/location", []string{
		"offsite=s3://backups/prod?region=us-east-1;credentials=/etc/cairn/locations/offsite",
		"old=s3://archive?region=eu-west-1;readonly;credentials=/etc/cairn/locations/old",
		"plain=s3://plain?region=eu-west-1",
	}, false)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"s3://backups/prod?region=us-east-1": "/etc/cairn/locations/offsite",
		"s3://archive?region=eu-west-1":      "/etc/cairn/locations/old",
	}, c.CredentialDirs())
	_, readOnly := c.ReadOnlyURL("s3://archive?region=eu-west-1")
	assert.True(t, readOnly, "options combine")

	for spec, want := range map[string]string{
		"x=s3://b;credentials=":           "unknown option",
		"x=s3://b;secret=/x":              "unknown option",
		"x=gs://b;credentials=/etc/x":     "for s3:// locations",
		"x=azblob://c;credentials=/etc/x": "for s3:// locations",
	} {
		_, err := ParseCatalog("file:///l", []string{spec}, false)
		assert.ErrorContains(t, err, want, spec)
	}
}
