package devserver

import (
	"errors"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.uber.org/zap"
)

// Defaults applied by Start to zero-valued Options fields.
const (
	DefaultFrontendAddr = "127.0.0.1:7233"
	DefaultNamespace    = "default"
	DefaultRetention    = 30 * 24 * time.Hour

	// dbFileName is the SQLite file under Options.DataDir.
	dbFileName = "temporal.db"
)

// Options configures the embedded server.
type Options struct {
	// DataDir holds the SQLite file DataDir/temporal.db; both are created if
	// missing. Required.
	DataDir string
	// FrontendAddr is the gRPC frontend listen address, e.g.
	// "127.0.0.1:7233"; port 0 picks a free port. The host must be an IP
	// address (or "localhost"). Default DefaultFrontendAddr.
	FrontendAddr string
	// UIAddr is the Web UI listen address, e.g. "127.0.0.1:8233"; port 0
	// picks a free port; "" runs no UI.
	UIAddr string
	// Namespace is created on first start if missing. Default "default".
	Namespace string
	// Retention is the namespace's workflow retention, applied on every
	// start. Default 30 days.
	Retention time.Duration
	// SearchAttributes are custom search attributes registered on
	// Namespace; ones that already exist with the same type are skipped.
	// The SQLite visibility store has a fixed number of slots per type.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Log receives devserver's own lines (start, stop, changes made) and
	// the Temporal server's warnings and errors, the latter named
	// "temporal". Default: no logs.
	Log *zap.Logger
}

// withDefaults returns a copy of o with defaults filled in, or an error if
// a required field is missing.
func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" {
		return o, errors.New("devserver: DataDir is required")
	}
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return o, err
	}
	o.DataDir = dir
	if o.FrontendAddr == "" {
		o.FrontendAddr = DefaultFrontendAddr
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.Retention < 0 {
		return o, errors.New("devserver: Retention must not be negative")
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	return o, nil
}

// dbPath is the SQLite file path.
func (o Options) dbPath() string { return filepath.Join(o.DataDir, dbFileName) }
