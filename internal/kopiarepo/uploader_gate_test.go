package kopiarepo

import (
	"context"
	"testing"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/manifest"
	"github.com/kopia/kopia/repo/object"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockingWriter is a repository writer whose FindManifests holds until
// released, as a checkpoint's retention pass does on slow storage.
type blockingWriter struct {
	repo.RepositoryWriter
	entered chan struct{}
	release chan struct{}
}

func (w *blockingWriter) FindManifests(context.Context, map[string]string) ([]*manifest.EntryMetadata, error) {
	close(w.entered)
	<-w.release
	return nil, nil
}

func (w *blockingWriter) NewObjectWriter(context.Context, object.WriterOptions) object.Writer {
	return nopObjectWriter{}
}

type nopObjectWriter struct{ endedWriter }

func (nopObjectWriter) Write(p []byte) (int, error) { return len(p), nil }

func TestUploadEndWaitsForTheCheckpointUnderWay(t *testing.T) {
	w := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	g := newUploaderGate(w)
	returned := make(chan error)
	go func() {
		_, err := g.FindManifests(context.Background(), nil)
		returned <- err
	}()
	<-w.entered

	idle := g.end()
	select {
	case <-idle:
		t.Fatal("the upload ended while a call of its checkpoint was under way")
	default:
	}
	_, err := g.FindManifests(context.Background(), nil)
	require.ErrorIs(t, err, errUploadEnded, "no call starts after the upload ended")
	_, err = g.NewObjectWriter(context.Background(), object.WriterOptions{}).Write([]byte("x"))
	require.ErrorIs(t, err, errUploadEnded, "no object is written after the upload ended")

	close(w.release)
	require.NoError(t, <-returned, "the call under way finishes normally")
	<-idle
}

func TestUploadEndWaitsForAnOpenObjectWriter(t *testing.T) {
	g := newUploaderGate(&blockingWriter{})
	ow := g.NewObjectWriter(context.Background(), object.WriterOptions{})
	idle := g.end()
	select {
	case <-idle:
		t.Fatal("the upload ended while an object writer of its checkpoint was open")
	default:
	}
	_, err := ow.Write([]byte("dir manifest"))
	require.NoError(t, err, "a writer opened before the end writes on")
	require.NoError(t, ow.Close())
	require.NoError(t, ow.Close(), "a second close does not count twice")
	<-idle
	assert.NotPanics(t, func() { g.end() }, "ending twice is harmless")
}
