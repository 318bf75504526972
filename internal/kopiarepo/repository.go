// Package kopiarepo is cairn's kopia repository: one per backup location,
// under its kopia/ prefix, always encrypted. It opens (creating on first
// use) the repository and moves a directory's data into it and back.
package kopiarepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/blob"
	"github.com/kopia/kopia/repo/content"

	"github.com/cairn-backup/cairn/internal/location"
)

// ErrWrongPassword is returned when the repository exists and the
// password does not open it. Nothing in the repository was changed.
var ErrWrongPassword = errors.New("the repository password does not open the volume data repository")

// ErrNoRepository is returned by Open with NoCreate when the location
// holds no repository.
var ErrNoRepository = errors.New("the location holds no volume data repository")

// ErrNoPassword is returned when no password was configured: the
// repository is always encrypted.
var ErrNoPassword = errors.New("no repository password is configured (set --repository-password-file, CAIRN_REPOSITORY_PASSWORD or the password Secret)")

// Config says where the repository is and how to open it.
type Config struct {
	// Location is the backup location URL; the repository is its kopia/.
	Location string
	// Password encrypts the repository. It is never logged or returned in
	// an error.
	Password string
	// ConfigDir holds kopia's connection files (mode 0600) and caches, in a
	// directory only this user can read.
	ConfigDir string
	// Hostname names this client in kopia's maintenance ownership.
	Hostname string
	// NoCreate opens only an existing repository (ErrNoRepository).
	NoCreate bool
	// UploadBytesPerSecond caps writes to the repository storage (0: no
	// cap), to spare a shared link.
	UploadBytesPerSecond float64
	// DownloadBytesPerSecond caps reads from it (0: no cap).
	DownloadBytesPerSecond float64
	// Uncached connects without a local cache, for reading a snapshot's
	// data once (a restore): a cache would write a second copy of all of
	// it to disk, checksummed on the way, for nothing. kopia has no cache
	// of metadata alone, so the metadata is not cached either.
	Uncached bool
	// Locations gives each location's credentials (nil: the process
	// environment's).
	Locations *location.Opener
}

// Repository is an open kopia repository.
type Repository struct {
	repo.Repository
	location string
}

// Open connects to the location's repository, creating it when the
// location has none yet. A wrong password fails with ErrWrongPassword.
func Open(ctx context.Context, cfg Config) (*Repository, error) {
	if cfg.Password == "" {
		return nil, ErrNoPassword
	}
	if cfg.ConfigDir == "" {
		return nil, errors.New("kopia repository: no config directory")
	}
	display := location.Display(cfg.Location)
	if err := os.MkdirAll(cfg.ConfigDir, 0o700); err != nil {
		return nil, fmt.Errorf("kopia config directory: %w", err)
	}
	if err := os.Chmod(cfg.ConfigDir, 0o700); err != nil {
		return nil, fmt.Errorf("kopia config directory: %w", err)
	}
	configFile := connectionFile(cfg)
	// A connection made before opens at once: connecting again would open
	// the repository twice (kopia verifies a new connection by opening it).
	if _, err := os.Stat(configFile); err == nil {
		r, err := repo.Open(ctx, configFile, cfg.Password, &repo.Options{})
		if err == nil {
			return retained(ctx, r, configFile, cfg, display)
		}
		if errors.Is(err, repo.ErrInvalidPassword) {
			return nil, fmt.Errorf("open volume data repository in %s: %w", display, ErrWrongPassword)
		}
	}
	env, err := cfg.Locations.Env(cfg.Location)
	if err != nil {
		return nil, err
	}
	st, err := openStorage(ctx, cfg.Location, env, true, cfg.UploadBytesPerSecond, cfg.DownloadBytesPerSecond)
	if err != nil {
		return nil, err
	}
	defer st.Close(ctx) //nolint:errcheck // Connect and Open keep their own handles

	if err := connect(ctx, st, configFile, cfg); err != nil {
		_ = os.Remove(configFile)
		return nil, fmt.Errorf("volume data repository in %s: %w", display, err)
	}
	r, err := repo.Open(ctx, configFile, cfg.Password, &repo.Options{})
	if err != nil {
		return nil, fmt.Errorf("open volume data repository in %s: %w", display, classify(err))
	}
	return retained(ctx, r, configFile, cfg, display)
}

// retained is the open repository r once its blob retention is the
// location's lock, opened again when it had to change.
func retained(ctx context.Context, r repo.Repository, configFile string, cfg Config, display string) (*Repository, error) {
	changed, err := applyRetention(ctx, r, cfg.Locations.Lock(cfg.Location))
	if err != nil {
		_ = r.Close(ctx)
		return nil, fmt.Errorf("volume data repository in %s: %w", display, err)
	}
	if changed {
		if err := r.Close(ctx); err != nil {
			return nil, fmt.Errorf("volume data repository in %s: %w", display, err)
		}
		if r, err = repo.Open(ctx, configFile, cfg.Password, &repo.Options{}); err != nil {
			return nil, fmt.Errorf("open volume data repository in %s: %w", display, classify(err))
		}
	}
	return &Repository{Repository: r, location: display}, nil
}

// connect writes the connection file, creating the repository first when
// the storage holds none.
func connect(ctx context.Context, st blob.Storage, configFile string, cfg Config) error {
	opts := &repo.ConnectOptions{
		ClientOptions: repo.ClientOptions{Hostname: cfg.Hostname, Username: "cairn"},
	}
	if !cfg.Uncached {
		opts.CachingOptions = content.CachingOptions{
			CacheDirectory:         filepath.Join(cfg.ConfigDir, "cache", filepath.Base(configFile)),
			ContentCacheSizeBytes:  512 << 20,
			MetadataCacheSizeBytes: 512 << 20,
			MaxListCacheDuration:   content.DurationSeconds(30),
		}
	}
	err := repo.Connect(ctx, configFile, st, cfg.Password, opts)
	if errors.Is(err, repo.ErrRepositoryNotInitialized) && cfg.NoCreate {
		return ErrNoRepository
	}
	if errors.Is(err, repo.ErrRepositoryNotInitialized) {
		lock := retention(cfg.Locations.Lock(cfg.Location))
		newRepo := &repo.NewRepositoryOptions{RetentionMode: lock.RetentionMode, RetentionPeriod: lock.RetentionPeriod}
		if ierr := repo.Initialize(ctx, st, newRepo, cfg.Password); ierr != nil && !errors.Is(ierr, repo.ErrAlreadyInitialized) {
			return fmt.Errorf("create repository: %w", ierr)
		}
		err = repo.Connect(ctx, configFile, st, cfg.Password, opts)
	}
	if err != nil {
		return classify(err)
	}
	return os.Chmod(configFile, 0o600)
}

// classify turns kopia's password error into ours and keeps the rest.
func classify(err error) error {
	if errors.Is(err, repo.ErrInvalidPassword) {
		return ErrWrongPassword
	}
	return err
}

// connectionFile is named after what the connection holds (location,
// throttle limits, identity), so one config directory serves several
// locations and a changed setting makes a new connection. A capped one
// names cairn's throttle too: one made with kopia's is not reused.
func connectionFile(cfg Config) string {
	key := fmt.Sprintf("%s\x00%g\x00%g\x00%s", cfg.Location, cfg.UploadBytesPerSecond, cfg.DownloadBytesPerSecond, cfg.Hostname)
	if cfg.UploadBytesPerSecond > 0 || cfg.DownloadBytesPerSecond > 0 {
		key += "\x00" + throttledType
	}
	if cfg.Uncached {
		key += "\x00uncached"
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(cfg.ConfigDir, "repository-"+hex.EncodeToString(sum[:8])+".config")
}

// Location is the location the repository lives in, for messages.
func (r *Repository) Location() string { return r.location }
