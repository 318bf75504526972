package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/internal/tarball"
)

// writeSegment stores, as collection does, a segment for a part: here
// one holding cm (at shop/a), stamped mtime.
func (f *fixture) writeSegment(t *testing.T, part, cm string, mtime time.Time) {
	t.Helper()
	var buf bytes.Buffer
	sw := tarball.NewSegment(&buf, mtime, 1)
	require.NoError(t, sw.Add("configmaps", "v1", "shop", "a", []byte(cm)))
	require.NoError(t, sw.Close())
	f.write(t, b1.Segment(part), buf.String())
}

// segmentCM is what the segment of the ConfigMaps' part holds in place
// of the part's two items: the tarball shows which of the two was read.
const segmentCM = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop"},"data":{"from":"segment"}}`

// TestFinalizeSplicesTheSegmentOfAPart: a part with a segment of this
// backup's start time goes into the tarball as its segment holds it,
// and the other parts as their lines; the count is the segment's and the
// lines'.
func TestFinalizeSplicesTheSegmentOfAPart(t *testing.T) {
	f := newFixture(t, nil)
	seedCollected(t, f)
	f.writeSegment(t, b1.Part("configmaps", 1, 0), segmentCM, startTime)

	res, err := f.finalize(t, finalizeInput(f))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"resources/configmaps/namespaces/shop/a.json":                             segmentCM,
		"resources/configmaps/v1-preferredversion/namespaces/shop/a.json":         segmentCM,
		"resources/deployments.apps/namespaces/shop/web.json":                     web,
		"resources/deployments.apps/v1-preferredversion/namespaces/shop/web.json": web,
		"resources/namespaces/cluster/shop.json":                                  nsObj,
		"resources/namespaces/v1-preferredversion/cluster/shop.json":              nsObj,
	}, f.tarballObjects(t))
	assert.Equal(t, 3, res.Items)
	assert.Equal(t, map[time.Time]int{startTime: 7}, tarMTimes(t, f), "the version file and six entries")
}

// TestFinalizeReadsThePartWhenItsSegmentCannotServe: a segment stamped
// with another time (made for another tarball), a part whose items
// operations read again, or a segment older than its part (left by an
// attempt whose part a later one, on a worker from before segments,
// stored again without it): the part's lines are written instead.
func TestFinalizeReadsThePartWhenItsSegmentCannotServe(t *testing.T) {
	const cmB2 = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"shop"},"data":{"k":"2"}}`
	part := b1.Part("configmaps", 1, 0)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		wantB string
	}{
		{"another time", func(t *testing.T, f *fixture) {
			f.writeSegment(t, part, segmentCM, startTime.Add(time.Second))
		}, cmB},
		{"items read again", func(t *testing.T, f *fixture) {
			f.writeSegment(t, part, segmentCM, startTime)
			f.write(t, b1.UpdatedPart("configmaps", 0), cmB2+"\n")
		}, cmB2},
		{"older than its part", func(t *testing.T, f *fixture) {
			f.writeSegment(t, part, segmentCM, startTime)
			earlier := time.Now().Add(-time.Minute)
			require.NoError(t, os.Chtimes(filepath.Join(f.dir, filepath.FromSlash(b1.Segment(part))), earlier, earlier))
		}, cmB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			seedCollected(t, f)
			tc.setup(t, f)
			res, err := f.finalize(t, finalizeInput(f))
			require.NoError(t, err)
			got := f.tarballObjects(t)
			assert.Equal(t, cmA, got["resources/configmaps/namespaces/shop/a.json"])
			assert.Equal(t, tc.wantB, got["resources/configmaps/namespaces/shop/b.json"])
			assert.Equal(t, 4, res.Items)
		})
	}
}
