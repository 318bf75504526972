package tarball

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTripVeleroLayout(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, w.Add("configmaps", "v1", "app", "settings", []byte(`{"kind":"ConfigMap"}`)))
	require.NoError(t, w.Add("deployments.apps", "v1", "app", "web", []byte(`{"kind":"Deployment"}`)))
	require.NoError(t, w.Add("persistentvolumes", "v1", "", "pv-1", []byte(`{"kind":"PersistentVolume"}`)))
	assert.ErrorContains(t, w.Add("configmaps", "v1", "app", "", nil), "without a name")
	require.NoError(t, w.Close())
	assert.Equal(t, 3, w.Items)

	var paths []string
	var versions []string
	var preferred []bool
	format, err := Walk(bytes.NewReader(buf.Bytes()), Limits{}, func(e Entry) error {
		paths = append(paths, e.Path)
		versions = append(versions, e.Version)
		preferred = append(preferred, e.Preferred)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "1.1.0", format)
	assert.Equal(t, []string{
		"resources/configmaps/namespaces/app/settings.json",
		"resources/configmaps/v1-preferredversion/namespaces/app/settings.json",
		"resources/deployments.apps/namespaces/app/web.json",
		"resources/deployments.apps/v1-preferredversion/namespaces/app/web.json",
		"resources/persistentvolumes/cluster/pv-1.json",
		"resources/persistentvolumes/v1-preferredversion/cluster/pv-1.json",
	}, paths)
	assert.Equal(t, []string{"", "v1", "", "v1", "", "v1"}, versions)
	assert.Equal(t, []bool{false, true, false, true, false, true}, preferred)
}

func TestWalkCorrupt(t *testing.T) {
	_, err := Walk(bytes.NewReader([]byte("not gzip")), Limits{}, func(Entry) error { return nil })
	assert.ErrorContains(t, err, "not a gzip stream")
	assert.ErrorIs(t, err, ErrCorrupt)

	var buf bytes.Buffer
	w, err := NewWriter(&buf, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, w.Add("configmaps", "v1", "a", "b", bytes.Repeat([]byte("x"), 4096)))
	require.NoError(t, w.Close())
	whole := buf.Bytes()
	// Cut in the middle, and cut only the gzip trailer after tar's end
	// marker: both are incomplete.
	for _, n := range []int{len(whole) / 2, len(whole) - 4} {
		_, err = Walk(bytes.NewReader(whole[:n]), Limits{}, func(Entry) error { return nil })
		assert.ErrorIs(t, err, ErrCorrupt, "cut at %d of %d", n, len(whole))
	}

	// An error of the source is an I/O failure, not corruption.
	down := errors.New("connection reset")
	_, err = Walk(io.MultiReader(bytes.NewReader(whole[:len(whole)/2]), iotest.ErrReader(down)), Limits{}, func(Entry) error { return nil })
	assert.ErrorIs(t, err, down)
	assert.NotErrorIs(t, err, ErrCorrupt)

	// fn's error comes back as is.
	stop := errors.New("stop")
	_, err = Walk(bytes.NewReader(whole), Limits{}, func(Entry) error { return stop })
	assert.Equal(t, stop, err)
}

func TestParsePath(t *testing.T) {
	cases := []struct {
		path string
		want Entry
		ok   bool
	}{
		{"resources/configmaps/namespaces/app/settings.json",
			Entry{GroupResource: "configmaps", Namespace: "app", Name: "settings"}, true},
		{"resources/persistentvolumes/cluster/pv-1.json",
			Entry{GroupResource: "persistentvolumes", Name: "pv-1"}, true},
		{"resources/deployments.apps/v1-preferredversion/namespaces/app/web.json",
			Entry{GroupResource: "deployments.apps", Version: "v1", Preferred: true, Namespace: "app", Name: "web"}, true},
		{"resources/storageclasses.storage.k8s.io/v1-preferredversion/cluster/fast.json",
			Entry{GroupResource: "storageclasses.storage.k8s.io", Version: "v1", Preferred: true, Name: "fast"}, true},
		{"resources/widgets.example.com/v1beta1/namespaces/app/w.json",
			Entry{GroupResource: "widgets.example.com", Version: "v1beta1", Namespace: "app", Name: "w"}, true},
		{"resources/gadgets.example.com/v2alpha1/cluster/g.json",
			Entry{GroupResource: "gadgets.example.com", Version: "v2alpha1", Name: "g"}, true},
		// A namespace called "cluster" stays a namespace.
		{"resources/configmaps/namespaces/cluster/c.json",
			Entry{GroupResource: "configmaps", Namespace: "cluster", Name: "c"}, true},

		{"metadata/version", Entry{}, false},
		{"resources/configmaps/namespaces/app/settings.yaml", Entry{}, false},
		{"resources/configmaps/namespaces/settings.json", Entry{}, false},
		{"resources/configmaps/cluster/extra/c.json", Entry{}, false},
		{"resources/configmaps/v1/namespaces/app/extra/c.json", Entry{}, false},
		{"resources/configmaps/v1/other/c.json", Entry{}, false},
		{"resources/configmaps/-preferredversion/cluster/c.json", Entry{}, false},
		{"resources/configmaps/namespaces//c.json", Entry{}, false},
		{"resources/configmaps/cluster/.json", Entry{}, false},
		{"resources//cluster/c.json", Entry{}, false},
		{"other/configmaps/cluster/c.json", Entry{}, false},
	}
	for _, c := range cases {
		got, ok := parsePath(c.path)
		assert.Equal(t, c.ok, ok, c.path)
		if c.ok {
			c.want.Path = c.path
			assert.Equal(t, c.want, got, c.path)
		}
	}
}

// bigObjectTarball is a tarball of one 1 MiB object (zeros: it compresses
// to almost nothing, as a gzip bomb does).
func bigObjectTarball(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, w.Add("configmaps", "v1", "app", "huge", make([]byte, 1<<20)))
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// An object file past the entry limit is refused before it is read.
func TestWalkRefusesAnEntryPastTheLimit(t *testing.T) {
	data := bigObjectTarball(t)
	read := 0
	_, err := Walk(bytes.NewReader(data), Limits{EntryBytes: 64 << 10}, func(Entry) error { read++; return nil })
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "more than the limit of 65536")
	assert.Zero(t, read)

	_, err = Walk(bytes.NewReader(data), Limits{}, func(Entry) error { return nil })
	assert.NoError(t, err, "the same tarball is read under the default limits")
}

// A stream that decompresses past the total limit is refused, whatever
// its files: here 2 MiB of objects from a few KiB of gzip.
func TestWalkRefusesAStreamPastTheTotalLimit(t *testing.T) {
	data := bigObjectTarball(t)
	require.Less(t, len(data), 64<<10)
	_, err := Walk(bytes.NewReader(data), Limits{TotalBytes: 512 << 10}, func(Entry) error { return nil })
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "decompresses to more than the limit")
}

// TestGzipBombIsRefusedWithoutReadingIt: a 256 MiB object of zeros, a few
// hundred KiB once gzipped, is refused from its header: Walk allocates
// less than 32 MiB in all while refusing it (the bound this test states),
// instead of reading the object whole.
func TestGzipBombIsRefusedWithoutReadingIt(t *testing.T) {
	const size = 256 << 20
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	require.NoError(t, err)
	tw := tar.NewWriter(gz)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "metadata/version", Mode: 0o600, Size: 5, Typeflag: tar.TypeReg}))
	_, err = tw.Write([]byte(FormatVersion))
	require.NoError(t, err)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "resources/configmaps/namespaces/app/bomb.json", Mode: 0o600, Size: size, Typeflag: tar.TypeReg}))
	_, err = io.CopyN(tw, zeros{}, size)
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	require.Less(t, buf.Len(), 2<<20, "the bomb is small")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Walk(bytes.NewReader(buf.Bytes()), Limits{}, func(Entry) error { return nil })
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(32<<20), "bytes allocated while refusing the bomb")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// The stamped headers are what archive/tar writes for the same entries:
// the tar inside the gzip is byte for byte the one archive/tar makes,
// for names the template holds and for those it leaves to archive/tar.
func TestStampedHeadersMatchArchiveTar(t *testing.T) {
	long := strings.Repeat("n", 90)
	items := []struct{ gr, version, namespace, name string }{
		{"configmaps", "v1", "app", "settings"},
		{"persistentvolumes", "v1", "", "pv-1"},
		// resources/configmaps/v1-preferredversion/namespaces/app/ is 55
		// bytes: a name of 40 makes the path exactly 100, one more needs
		// USTAR's prefix field, a much longer one a PAX record.
		{"configmaps", "v1", "app", strings.Repeat("a", 40)},
		{"configmaps", "v1", "app", strings.Repeat("b", 41)},
		{"configmaps", "v1", "app", long + long + long},
		{"configmaps", "v1", "app", "café"},
		{"widgets.example.com", "v1beta1", "team-a", "w"},
		{"odd/group", "v1", "app", "x"}, // cleaned by path.Join
	}
	sizes := []int{0, 1, 511, 512, 513, 1500}
	for _, mtime := range []time.Time{time.Unix(0, 0), time.Date(2026, 11, 29, 7, 10, 3, 600_000_000, time.UTC), time.Unix(-5, 0)} {
		var got bytes.Buffer
		w, err := NewWriter(&got, mtime)
		require.NoError(t, err)
		var want bytes.Buffer
		ref := tar.NewWriter(&want)
		refFile := func(name string, data []byte) {
			require.NoError(t, ref.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg}))
			_, err := ref.Write(data)
			require.NoError(t, err)
		}
		refFile("metadata/version", []byte(FormatVersion))
		for i, it := range items {
			data := bytes.Repeat([]byte{byte('A' + i)}, sizes[i%len(sizes)])
			require.NoError(t, w.Add(it.gr, it.version, it.namespace, it.name, data))
			refFile(ItemPath(it.gr, "", it.namespace, it.name), data)
			refFile(ItemPath(it.gr, it.version, it.namespace, it.name), data)
		}
		require.NoError(t, w.Close())
		require.NoError(t, ref.Close())
		assert.Equal(t, mtime.Unix() >= 0, w.stamps, "mtime %s", mtime)

		zr, err := gzip.NewReader(&got)
		require.NoError(t, err)
		tarBytes, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, len(want.Bytes()), len(tarBytes), "mtime %s", mtime)
		for off := 0; off < len(tarBytes); off += blockSize {
			require.Equal(t, want.Bytes()[off:off+blockSize], tarBytes[off:off+blockSize], "block at %d, mtime %s", off, mtime)
		}
	}
}

// BenchmarkAdd writes ConfigMaps of about 1 KiB as a backup's tarball does.
func BenchmarkAdd(b *testing.B) {
	data := bytes.Repeat([]byte("x"), 1100)
	w, err := NewWriter(io.Discard, time.Unix(1_700_000_000, 0))
	require.NoError(b, err)
	b.SetBytes(int64(2 * len(data)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := w.Add("configmaps", "v1", "ns-042", "cm-"+strconv.Itoa(i), data); err != nil {
			b.Fatal(err)
		}
	}
	require.NoError(b, w.Close())
}

// WalkWanted hands over only the entries want accepts by their path, and
// still reads the format and checks the stream to its end.
func TestWalkWantedSkipsWhatIsNotWanted(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, time.Unix(0, 0))
	require.NoError(t, err)
	require.NoError(t, w.Add("configmaps", "v1", "app", "a", []byte(`{"n":"a"}`)))
	require.NoError(t, w.Add("secrets", "v1", "app", "s", []byte(`{"n":"s"}`)))
	require.NoError(t, w.Close())

	var asked, got []string
	want := func(e Entry) bool {
		assert.Nil(t, e.Data, "want sees the path only")
		asked = append(asked, e.Path)
		return e.Preferred && e.GroupResource == "configmaps"
	}
	format, err := WalkWanted(bytes.NewReader(buf.Bytes()), Limits{}, want, func(e Entry) error {
		got = append(got, e.Path+" "+string(e.Data))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, FormatVersion, format)
	assert.Len(t, asked, 4)
	assert.Equal(t, []string{`resources/configmaps/v1-preferredversion/namespaces/app/a.json {"n":"a"}`}, got)

	whole := buf.Bytes()
	_, err = WalkWanted(bytes.NewReader(whole[:len(whole)-4]), Limits{}, func(Entry) bool { return false }, func(Entry) error { return nil })
	assert.ErrorIs(t, err, ErrCorrupt, "a stream cut short is corrupt though nothing was wanted")
}
