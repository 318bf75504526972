// Package etcd holds the activities of etcd snapshots: stream a snapshot
// from etcd's maintenance API into the location, read it back to verify
// it, commit or discard it.
package etcd

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// Config says how the worker reaches etcd.
type Config struct {
	// Endpoints are tried in order; the snapshot comes from the first
	// that answers (etcd members hold the same data).
	Endpoints   []string
	TLS         *tls.Config
	DialTimeout time.Duration
}

// Activities hold the etcd configuration of the worker.
type Activities struct {
	Etcd Config
	Log  *zap.Logger
	// Locations opens backup locations with the process's encryption key.
	Locations *location.Opener
}

// TakeEtcdSnapshot streams a snapshot into etcd/<name>/snapshot.db while
// hashing it. The object is committed by the location only when the whole
// stream arrived, so a cut stream leaves nothing that looks complete.
func (a *Activities) TakeEtcdSnapshot(ctx context.Context, spec v1alpha1.EtcdSnapshotSpec) (*v1alpha1.TakeEtcdSnapshotResult, error) {
	if len(a.Etcd.Endpoints) == 0 {
		return nil, temporal.NewNonRetryableApplicationError(
			"this worker has no etcd endpoints: start it with --etcd-endpoints (and --etcd-ca, --etcd-cert, --etcd-key for TLS)",
			v1alpha1.ErrTypeEtcdNotConfigured, nil)
	}
	loc, err := a.Locations.Open(ctx, spec.StorageLocation)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), v1alpha1.ErrTypeLocation, err)
	}
	defer loc.Close()
	log := a.Log.With(zap.String("etcdSnapshot", spec.Name))
	var failures []string
	for _, ep := range a.Etcd.Endpoints {
		res, err := a.snapshotFrom(ctx, loc, spec, ep)
		if err == nil {
			log.Info("Stored etcd snapshot", zap.String("endpoint", ep), zap.Int64("bytes", res.Bytes),
				zap.Int64("revision", res.Revision), zap.String("etcdVersion", res.EtcdVersion))
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Warn("etcd snapshot from endpoint failed", zap.String("endpoint", ep), zap.Error(err))
		failures = append(failures, ep+": "+err.Error())
	}
	return nil, fmt.Errorf("no etcd endpoint gave a snapshot: %s", strings.Join(failures, "; "))
}

func (a *Activities) snapshotFrom(ctx context.Context, loc *location.Location, spec v1alpha1.EtcdSnapshotSpec, endpoint string) (*v1alpha1.TakeEtcdSnapshotResult, error) {
	dial := a.Etcd.DialTimeout
	if dial <= 0 {
		dial = 10 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: a.Etcd.TLS, DialTimeout: dial,
		Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = cli.Close() }()
	// The member's status gives the revision and version when the
	// snapshot stream's first message does not carry them (older etcd).
	status, err := cli.Status(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	snap, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("open snapshot stream: %w", err)
	}
	defer func() { _ = snap.Snapshot.Close() }()

	w, err := loc.NewWriter(ctx, location.EtcdSnapshot(spec.Name).Snapshot())
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	progress := &heartbeatCounter{ctx: ctx}
	if _, err := io.Copy(io.MultiWriter(w, sum, progress), snap.Snapshot); err != nil {
		w.Abort()
		return nil, fmt.Errorf("stream snapshot: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("store snapshot: %w", err)
	}
	res := &v1alpha1.TakeEtcdSnapshotResult{Endpoint: endpoint, EtcdVersion: snap.Version, Bytes: progress.n,
		SHA256: hex.EncodeToString(sum.Sum(nil))}
	res.Revision = status.Header.GetRevision()
	if rev := snap.Header.GetRevision(); rev > 0 {
		res.Revision = rev
	}
	if res.EtcdVersion == "" {
		res.EtcdVersion = status.Version
	}
	return res, nil
}

// heartbeatCounter counts the bytes streamed and reports them in the
// activity's heartbeat (the SDK throttles the calls).
type heartbeatCounter struct {
	ctx context.Context
	n   int64
}

func (h *heartbeatCounter) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	activity.RecordHeartbeat(h.ctx, h.n)
	return len(p), nil
}
