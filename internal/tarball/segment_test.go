package tarball

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type object struct{ gr, version, namespace, name, data string }

var spliced = []object{
	{"configmaps", "v1", "shop", "a", `{"kind":"ConfigMap","metadata":{"name":"a"}}`},
	{"configmaps", "v1", "shop", "b", `{"kind":"ConfigMap","metadata":{"name":"b"},"data":{"k":"` + strings.Repeat("x", 700) + `"}}`},
	{"deployments.apps", "v1", "shop", "web", `{"kind":"Deployment"}`},
	{"namespaces", "v1", "", "shop", `{"kind":"Namespace"}`},
	{"widgets.example.com", "v1beta1", "shop", strings.Repeat("w", 90), `{"kind":"Widget"}`},
}

func segment(t *testing.T, mtime time.Time, objs []object) []byte {
	t.Helper()
	var buf bytes.Buffer
	sw := NewSegment(&buf, mtime, len(objs))
	for _, o := range objs {
		require.NoError(t, sw.Add(o.gr, o.version, o.namespace, o.name, []byte(o.data)))
	}
	require.NoError(t, sw.Close())
	return buf.Bytes()
}

// tarEntries decompresses and reads a tarball with the standard
// library alone, as any other tool would: every entry's name, time and
// data, in order.
func tarEntries(t *testing.T, tarball []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tarball))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var out []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, hdr.Name+" "+hdr.ModTime.UTC().Format(time.RFC3339)+" "+string(data))
	}
	return out
}

// TestSplicedTarballHoldsWhatAWrittenOneHolds: objects written one by
// one, and the same objects in segments spliced between others, make
// tarballs with the same entries, in the same order, with the same times,
// and the count includes the segments' objects.
func TestSplicedTarballHoldsWhatAWrittenOneHolds(t *testing.T) {
	mtime := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var whole bytes.Buffer
	w, err := NewWriter(&whole, mtime)
	require.NoError(t, err)
	for _, o := range spliced {
		require.NoError(t, w.Add(o.gr, o.version, o.namespace, o.name, []byte(o.data)))
	}
	require.NoError(t, w.Close())

	var joined bytes.Buffer
	j, err := NewWriter(&joined, mtime)
	require.NoError(t, err)
	ok, err := j.AppendSegment(bytes.NewReader(segment(t, mtime, spliced[:2])))
	require.NoError(t, err)
	require.True(t, ok)
	o := spliced[2]
	require.NoError(t, j.Add(o.gr, o.version, o.namespace, o.name, []byte(o.data)))
	for _, seg := range [][]object{spliced[3:4], spliced[4:]} {
		ok, err := j.AppendSegment(bytes.NewReader(segment(t, mtime, seg)))
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.NoError(t, j.Close())

	assert.Equal(t, len(spliced), j.Items)
	assert.Equal(t, tarEntries(t, whole.Bytes()), tarEntries(t, joined.Bytes()))
	format, err := Walk(bytes.NewReader(joined.Bytes()), Limits{}, func(Entry) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, FormatVersion, format)
}

// TestSplicedTarballExtractsWithTar: GNU tar, the tool a user reaches
// for, reads a tarball of several gzip members to its end.
func TestSplicedTarballExtractsWithTar(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar here")
	}
	mtime := time.Unix(1_700_000_000, 0)
	var joined bytes.Buffer
	j, err := NewWriter(&joined, mtime)
	require.NoError(t, err)
	for _, seg := range [][]object{spliced[:2], spliced[2:]} {
		ok, err := j.AppendSegment(bytes.NewReader(segment(t, mtime, seg)))
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.NoError(t, j.Close())
	cmd := exec.Command("tar", "-tzf", "-")
	cmd.Stdin = bytes.NewReader(joined.Bytes())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Len(t, strings.Fields(string(out)), 1+2*len(spliced))
	assert.Contains(t, string(out), "resources/namespaces/v1-preferredversion/cluster/shop.json")
}

// TestASegmentOfAnotherTimeIsNotSpliced: a segment stamped with another
// time, or bytes that are no segment, are refused before anything is
// written, so the caller can write the objects itself.
func TestASegmentOfAnotherTimeIsNotSpliced(t *testing.T) {
	mtime := time.Unix(1_700_000_000, 0)
	var plainGzip bytes.Buffer
	zw := gzip.NewWriter(&plainGzip)
	_, _ = zw.Write([]byte("hello"))
	require.NoError(t, zw.Close())
	for name, seg := range map[string][]byte{
		"another time":     segment(t, mtime.Add(time.Nanosecond), spliced),
		"plain gzip":       plainGzip.Bytes(),
		"not gzip at all":  []byte("not gzip"),
		"empty":            nil,
		"a header cut off": segment(t, mtime, spliced)[:12],
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			w, err := NewWriter(&out, mtime)
			require.NoError(t, err)
			before := out.Len()
			ok, err := w.AppendSegment(bytes.NewReader(seg))
			require.NoError(t, err)
			assert.False(t, ok)
			assert.Equal(t, before, out.Len())
			assert.Zero(t, w.Items)
		})
	}
}

func TestASegmentMustHoldWhatItSaid(t *testing.T) {
	sw := NewSegment(io.Discard, time.Unix(0, 0), 2)
	require.NoError(t, sw.Add("configmaps", "v1", "shop", "a", []byte("{}")))
	assert.ErrorContains(t, sw.Close(), "segment of 2 objects holds 1")
}
