package etcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// trailerSize is the SHA-256 etcd appends to every snapshot it streams:
// the hash of the database bytes before it.
const trailerSize = sha256.Size

// VerifyEtcdSnapshot reads the stored snapshot back from the location,
// heartbeating the bytes read, and checks its size, its hash against the one taken while streaming, and
// etcd's own trailer against the data, so what is called Completed is
// what etcd sent and what a restore will read.
func (a *Activities) VerifyEtcdSnapshot(ctx context.Context, in v1alpha1.VerifyEtcdSnapshotInput) error {
	loc, err := a.Locations.Open(ctx, in.Spec.StorageLocation)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	r, err := loc.NewReader(ctx, location.EtcdSnapshot(in.Spec.Name).Snapshot())
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read only
	// A real snapshot is gigabytes: the bytes read go in the heartbeat.
	if err := Verify(io.TeeReader(r, &heartbeatCounter{ctx: ctx}), in.Bytes, in.SHA256); err != nil {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("stored etcd snapshot %s is not what etcd sent: %v", in.Spec.Name, err), v1alpha1.ErrTypeCorruptBackup, err)
	}
	a.Log.Info("Verified stored etcd snapshot", zap.String("etcdSnapshot", in.Spec.Name), zap.Int64("bytes", in.Bytes))
	return nil
}

// Verify checks that r holds size bytes hashing to sha256Hex, ending with
// the SHA-256 of the bytes before it.
func Verify(r io.Reader, size int64, sha256Hex string) error {
	if size < trailerSize {
		return fmt.Errorf("%d bytes is too short for an etcd snapshot", size)
	}
	whole := sha256.New()
	data := sha256.New()
	n, err := io.CopyN(io.MultiWriter(whole, data), r, size-trailerSize)
	if err != nil {
		return fmt.Errorf("read after %d bytes: %w", n, err)
	}
	trailer := make([]byte, trailerSize)
	if _, err := io.ReadFull(r, trailer); err != nil {
		return fmt.Errorf("read the integrity trailer: %w", err)
	}
	whole.Write(trailer)
	if extra, _ := io.Copy(io.Discard, r); extra > 0 {
		return fmt.Errorf("%d bytes more than the %d streamed", extra, size)
	}
	if got := hex.EncodeToString(whole.Sum(nil)); got != sha256Hex {
		return fmt.Errorf("sha256 %s, streamed %s", got, sha256Hex)
	}
	if !bytes.Equal(data.Sum(nil), trailer) {
		return fmt.Errorf("etcd's integrity trailer does not match the data")
	}
	return nil
}
