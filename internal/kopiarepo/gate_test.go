package kopiarepo

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/kopia/kopia/fs"
)

// readGate lets an upload read its source until `after` bytes were read,
// then holds every further read until released: the upload stands still
// mid-way, however fast the machine, for as long as a test needs.
type readGate struct {
	after    int64
	read     atomic.Int64
	open     chan struct{}
	openOnce sync.Once
}

func newReadGate(after int64) *readGate {
	return &readGate{after: after, open: make(chan struct{})}
}

// reached says the reads have come to the gate.
func (g *readGate) reached() bool { return g.read.Load() >= g.after }

func (g *readGate) release() { g.openOnce.Do(func() { close(g.open) }) }

func (g *readGate) wait(ctx context.Context) error {
	if !g.reached() {
		return nil
	}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gatedDir serves a directory tree whose files read through the gate.
type gatedDir struct {
	fs.Directory
	gate *readGate
}

func (d gatedDir) wrap(e fs.Entry) fs.Entry {
	switch e := e.(type) {
	case fs.Directory:
		return gatedDir{e, d.gate}
	case fs.File:
		return gatedFile{e, d.gate}
	}
	return e
}

func (d gatedDir) Child(ctx context.Context, name string) (fs.Entry, error) {
	e, err := d.Directory.Child(ctx, name)
	if err != nil {
		return nil, err
	}
	return d.wrap(e), nil
}

func (d gatedDir) Iterate(ctx context.Context) (fs.DirectoryIterator, error) {
	it, err := d.Directory.Iterate(ctx)
	if err != nil {
		return nil, err
	}
	return gatedIterator{it, d}, nil
}

type gatedIterator struct {
	fs.DirectoryIterator
	dir gatedDir
}

func (it gatedIterator) Next(ctx context.Context) (fs.Entry, error) {
	e, err := it.DirectoryIterator.Next(ctx)
	if e == nil || err != nil {
		return e, err
	}
	return it.dir.wrap(e), nil
}

type gatedFile struct {
	fs.File
	gate *readGate
}

func (f gatedFile) Open(ctx context.Context) (fs.Reader, error) {
	r, err := f.File.Open(ctx)
	if err != nil {
		return nil, err
	}
	return &gatedReader{Reader: r, ctx: ctx, gate: f.gate}, nil
}

type gatedReader struct {
	fs.Reader
	ctx  context.Context
	gate *readGate
}

func (r *gatedReader) Read(p []byte) (int, error) {
	if err := r.gate.wait(r.ctx); err != nil {
		return 0, err
	}
	n, err := r.Reader.Read(p)
	r.gate.read.Add(int64(n))
	return n, err
}
