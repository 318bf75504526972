package kopiarepo

import (
	"context"
	"errors"
	"sync"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/content"
	"github.com/kopia/kopia/repo/manifest"
	"github.com/kopia/kopia/repo/object"
)

// errUploadEnded is what the uploader's calls get once its upload ended.
var errUploadEnded = errors.New("the upload has ended")

// uploaderGate is the writer kopia's uploader works through; it counts
// the uploader's calls under way and its open object writers, so the
// upload can wait for the last of them before the session closes.
//
// Kopia (v0.23.1) checkpoints on a goroutine of its own. Upload stops that
// goroutine's timer when it returns, but does not wait for a checkpoint
// already under way: that checkpoint went on using the repository after
// the session had closed it, and a data mover died of a segmentation
// fault reading an index the close had unmapped.
type uploaderGate struct {
	repo.RepositoryWriter
	mu    sync.Mutex
	busy  int
	ended bool
	idle  chan struct{}
}

func newUploaderGate(w repo.RepositoryWriter) *uploaderGate {
	return &uploaderGate{RepositoryWriter: w, idle: make(chan struct{})}
}

// end refuses the uploader's new calls and returns a channel closed once
// no call of it is under way and no object writer of it is open.
func (g *uploaderGate) end() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.ended {
		g.ended = true
		if g.busy == 0 {
			close(g.idle)
		}
	}
	return g.idle
}

func (g *uploaderGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return false
	}
	g.busy++
	return true
}

func (g *uploaderGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy--
	if g.ended && g.busy == 0 {
		close(g.idle)
	}
}

func gated[T any](g *uploaderGate, call func() (T, error)) (T, error) {
	if !g.enter() {
		var zero T
		return zero, errUploadEnded
	}
	defer g.leave()
	return call()
}

func gatedErr(g *uploaderGate, call func() error) error {
	_, err := gated(g, func() (struct{}, error) { return struct{}{}, call() })
	return err
}

func (g *uploaderGate) NewObjectWriter(ctx context.Context, opt object.WriterOptions) object.Writer {
	if !g.enter() {
		return endedWriter{}
	}
	return &gatedWriter{Writer: g.RepositoryWriter.NewObjectWriter(ctx, opt), leave: sync.OnceFunc(g.leave)}
}

func (g *uploaderGate) OpenObject(ctx context.Context, id object.ID) (object.Reader, error) {
	return gated(g, func() (object.Reader, error) { return g.RepositoryWriter.OpenObject(ctx, id) })
}

func (g *uploaderGate) VerifyObject(ctx context.Context, id object.ID) ([]content.ID, error) {
	return gated(g, func() ([]content.ID, error) { return g.RepositoryWriter.VerifyObject(ctx, id) })
}

func (g *uploaderGate) GetManifest(ctx context.Context, id manifest.ID, data any) (*manifest.EntryMetadata, error) {
	return gated(g, func() (*manifest.EntryMetadata, error) { return g.RepositoryWriter.GetManifest(ctx, id, data) })
}

func (g *uploaderGate) FindManifests(ctx context.Context, labels map[string]string) ([]*manifest.EntryMetadata, error) {
	return gated(g, func() ([]*manifest.EntryMetadata, error) { return g.RepositoryWriter.FindManifests(ctx, labels) })
}

func (g *uploaderGate) ContentInfo(ctx context.Context, id content.ID) (content.Info, error) {
	return gated(g, func() (content.Info, error) { return g.RepositoryWriter.ContentInfo(ctx, id) })
}

func (g *uploaderGate) PrefetchContents(ctx context.Context, ids []content.ID, hint string) []content.ID {
	got, _ := gated(g, func() ([]content.ID, error) { return g.RepositoryWriter.PrefetchContents(ctx, ids, hint), nil })
	return got
}

func (g *uploaderGate) PrefetchObjects(ctx context.Context, ids []object.ID, hint string) ([]content.ID, error) {
	return gated(g, func() ([]content.ID, error) { return g.RepositoryWriter.PrefetchObjects(ctx, ids, hint) })
}

func (g *uploaderGate) ConcatenateObjects(ctx context.Context, ids []object.ID, opt repo.ConcatenateOptions) (object.ID, error) {
	return gated(g, func() (object.ID, error) { return g.RepositoryWriter.ConcatenateObjects(ctx, ids, opt) })
}

func (g *uploaderGate) PutManifest(ctx context.Context, labels map[string]string, payload any) (manifest.ID, error) {
	return gated(g, func() (manifest.ID, error) { return g.RepositoryWriter.PutManifest(ctx, labels, payload) })
}

func (g *uploaderGate) ReplaceManifests(ctx context.Context, labels map[string]string, payload any) (manifest.ID, error) {
	return gated(g, func() (manifest.ID, error) { return g.RepositoryWriter.ReplaceManifests(ctx, labels, payload) })
}

func (g *uploaderGate) DeleteManifest(ctx context.Context, id manifest.ID) error {
	return gatedErr(g, func() error { return g.RepositoryWriter.DeleteManifest(ctx, id) })
}

func (g *uploaderGate) Flush(ctx context.Context) error {
	return gatedErr(g, func() error { return g.RepositoryWriter.Flush(ctx) })
}

func (g *uploaderGate) Refresh(ctx context.Context) error {
	return gatedErr(g, func() error { return g.RepositoryWriter.Refresh(ctx) })
}

// gatedWriter is an object writer the gate counts until it is closed.
type gatedWriter struct {
	object.Writer
	leave func()
}

func (w *gatedWriter) Close() error {
	defer w.leave()
	return w.Writer.Close()
}

// endedWriter is the object writer of an uploader whose upload ended.
type endedWriter struct{}

func (endedWriter) Write([]byte) (int, error)      { return 0, errUploadEnded }
func (endedWriter) Checkpoint() (object.ID, error) { return object.EmptyID, errUploadEnded }
func (endedWriter) Result() (object.ID, error)     { return object.EmptyID, errUploadEnded }
func (endedWriter) Close() error                   { return nil }
