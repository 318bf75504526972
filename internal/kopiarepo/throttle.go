package kopiarepo

import (
	"context"
	"fmt"

	"github.com/kopia/kopia/repo/blob"
	"golang.org/x/time/rate"
)

// throttledType is the kopia storage type of a location whose transfers
// are capped. kopia's own throttle takes 20 MB of the download budget
// before every read of a blob of unknown length (indexes, manifests,
// the format blob), and gives back the unused part only afterwards:
// opening a repository that reads a few dozen such small blobs at once
// waited tens of seconds at a cap of a few MB/s. This one charges a read
// of unknown length for what it read, after reading it.
const throttledType = "cairn-throttled"

// throttledOptions is how a throttled storage is kept in kopia's
// connection file: the storage it wraps, and the caps. The caps' JSON
// names are not kopia's, so kopia adds no throttle of its own.
type throttledOptions struct {
	Inner                  blob.ConnectionInfo `json:"inner"`
	UploadBytesPerSecond   float64             `json:"uploadBytesPerSecond,omitempty"`
	DownloadBytesPerSecond float64             `json:"downloadBytesPerSecond,omitempty"`
}

func init() {
	blob.AddSupportedStorage(throttledType, throttledOptions{}, func(ctx context.Context, o *throttledOptions, create bool) (blob.Storage, error) {
		inner, err := blob.NewStorage(ctx, o.Inner, create)
		if err != nil {
			return nil, fmt.Errorf("throttled storage: %w", err)
		}
		return throttle(inner, o.UploadBytesPerSecond, o.DownloadBytesPerSecond), nil
	})
}

// throttle caps st's uploads and downloads at the given bytes per
// second (0: no cap); st itself when neither is capped.
func throttle(st blob.Storage, upload, download float64) blob.Storage {
	if upload <= 0 && download <= 0 {
		return st
	}
	return &throttledStorage{Storage: st, upload: limiter(upload), download: limiter(download),
		opts: throttledOptions{UploadBytesPerSecond: upload, DownloadBytesPerSecond: download}}
}

type throttledStorage struct {
	blob.Storage
	upload, download *rate.Limiter // nil: no cap
	opts             throttledOptions
}

// limiter lets a second's worth of bytes through at once, at least
// 64 KiB; nil for no cap.
func limiter(bytesPerSecond float64) *rate.Limiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(bytesPerSecond), max(int(bytesPerSecond), 64<<10))
}

// take waits until l lets n bytes through, in bursts.
func take(ctx context.Context, l *rate.Limiter, n int64) error {
	if l == nil {
		return nil
	}
	for n > 0 {
		chunk := min(n, int64(l.Burst()))
		if err := l.WaitN(ctx, int(chunk)); err != nil {
			return fmt.Errorf("transfer cap: %w", err)
		}
		n -= chunk
	}
	return nil
}

func (s *throttledStorage) GetBlob(ctx context.Context, id blob.ID, offset, length int64, output blob.OutputBuffer) error {
	if length >= 0 {
		if err := take(ctx, s.download, length); err != nil {
			return err
		}
		return s.Storage.GetBlob(ctx, id, offset, length, output) // unwrapped: kopia checks for blob.ErrBlobNotFound
	}
	if err := s.Storage.GetBlob(ctx, id, offset, length, output); err != nil {
		return err
	}
	return take(ctx, s.download, int64(output.Length()))
}

func (s *throttledStorage) PutBlob(ctx context.Context, id blob.ID, data blob.Bytes, opts blob.PutOptions) error {
	if err := take(ctx, s.upload, int64(data.Length())); err != nil {
		return err
	}
	return s.Storage.PutBlob(ctx, id, data, opts)
}

func (s *throttledStorage) ConnectionInfo() blob.ConnectionInfo {
	o := s.opts
	o.Inner = s.Storage.ConnectionInfo()
	return blob.ConnectionInfo{Type: throttledType, Config: &o}
}
