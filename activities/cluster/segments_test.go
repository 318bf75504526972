package cluster

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
	"github.com/cairn-backup/cairn/internal/tarball"
	"github.com/cairn-backup/cairn/pkg/extension"
)

var collectStart = time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)

// assertSegmentsHoldTheParts: every part stored has a segment and every
// segment a part, and a segment holds its part's items, each at both of
// its paths in the tarball, stamped with the backup's start.
func (f *collectFixture) assertSegmentsHoldTheParts() {
	f.t.Helper()
	ctx := context.Background()
	loc, err := location.OpenPlain(ctx, f.in.Location)
	require.NoError(f.t, err)
	defer loc.Close()
	keys := location.Backup("b")
	parts, err := loc.Keys(ctx, keys.AllParts())
	require.NoError(f.t, err)
	segments, err := loc.Keys(ctx, keys.AllSegments())
	require.NoError(f.t, err)
	var want []string
	for _, part := range parts {
		want = append(want, keys.Segment(part))
	}
	assert.ElementsMatch(f.t, want, segments, "one segment for each part")

	for _, part := range parts {
		var fromPart []string
		require.NoError(f.t, loc.ReadLines(ctx, part, func(line []byte) error {
			var obj struct {
				APIVersion string                           `json:"apiVersion"`
				Metadata   struct{ Name, Namespace string } `json:"metadata"`
			}
			require.NoError(f.t, json.Unmarshal(line, &obj))
			where := "namespaces/" + obj.Metadata.Namespace + "/" + obj.Metadata.Name + ".json"
			fromPart = append(fromPart, "resources/configmaps/"+where+" "+string(line),
				"resources/configmaps/"+tarball.VersionOf(obj.APIVersion)+"-preferredversion/"+where+" "+string(line))
			return nil
		}))
		data, err := loc.ReadAll(ctx, keys.Segment(part))
		require.NoError(f.t, err)
		assert.Equal(f.t, fromPart, segmentEntries(f.t, data, collectStart), part)
	}
}

// segmentEntries are a segment's entries, each its path and data; every
// entry's time must be mtime's.
func segmentEntries(t *testing.T, segment []byte, mtime time.Time) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(segment))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var out []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		assert.True(t, hdr.ModTime.Equal(mtime.Truncate(time.Second)), "%s stamped %s", hdr.Name, hdr.ModTime)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, hdr.Name+" "+string(data))
	}
}

// TestCollectStoresEachPartAsASegment: with the backup's start time,
// each part stored has its segment beside it.
func TestCollectStoresEachPartAsASegment(t *testing.T) {
	f := newCollectFixture(t)
	_, err := f.attempt(nil)
	require.NoError(t, err)
	require.Equal(t, pages, f.storedParts())
	f.assertSegmentsHoldTheParts()
}

// TestCollectWithoutAStartTimeStoresNoSegment: a collect scheduled
// without the start time (a dry run, or a workflow from before
// segments) stores the parts alone, and finalize reads them.
func TestCollectWithoutAStartTimeStoresNoSegment(t *testing.T) {
	f := newCollectFixture(t)
	f.in.StartTime = nil
	_, err := f.attempt(nil)
	require.NoError(t, err)
	require.Equal(t, pages, f.storedParts())
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(t, err)
	defer loc.Close()
	segments, err := loc.Keys(context.Background(), location.Backup("b").AllSegments())
	require.NoError(t, err)
	assert.Empty(t, segments)
}

// TestATypeListedAgainKeepsNoSegmentOfBefore: a type whose continue
// token expires is listed again from its start, and has shrunk by then
// to three pages: of the four pages stored before, no segment is left.
func TestATypeListedAgainKeepsNoSegmentOfBefore(t *testing.T) {
	f := newCollectFixture(t)
	f.lister.failOn["t4"] = apierrors.NewResourceExpired("continue token too old")
	f.lister.onRequest = func(requested int) {
		if requested == 5 { // the request for t4, which expires
			f.lister.pages = 3
		}
	}
	res, err := f.attempt(nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Restarts)
	assert.Equal(t, 3, f.storedParts())
	f.assertSegmentsHoldTheParts()
}

// TestASegmentFilesAnItemAtTheVersionItsExtensionAnswered: an extension
// may answer with another version of the object it was given; its
// segment files it under that version, as finalize would from the part.
func TestASegmentFilesAnItemAtTheVersionItsExtensionAnswered(t *testing.T) {
	f := newCollectFixture(t)
	caller := &fakeCaller{answer: func(req extension.BackupItemsRequest) (*extension.BackupItemsResponse, error) {
		resp := &extension.BackupItemsResponse{}
		for _, raw := range req.Items {
			resp.Items = append(resp.Items, extension.BackupItemAnswer{
				Item: bytes.Replace(raw, []byte(`"apiVersion":"v1"`), []byte(`"apiVersion":"v2alpha1"`), 1)})
		}
		return resp, nil
	}}
	f.register(caller, ext("versioned", v1alpha1.ExtensionSelector{Resources: []string{"configmaps"}}))
	_, err := f.attempt(nil)
	require.NoError(t, err)
	f.assertSegmentsHoldTheParts()
	loc, err := location.OpenPlain(context.Background(), f.in.Location)
	require.NoError(t, err)
	defer loc.Close()
	data, err := loc.ReadAll(context.Background(), location.Backup("b").Segment(location.Backup("b").Part("configmaps", 0, 0)))
	require.NoError(t, err)
	assert.Contains(t, segmentEntries(t, data, collectStart)[1], "resources/configmaps/v2alpha1-preferredversion/")
}
