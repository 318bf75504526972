package kopiarepo

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kopia/kopia/repo/blob"
	"github.com/kopia/kopia/repo/blob/azure"
	"github.com/kopia/kopia/repo/blob/filesystem"
	"github.com/kopia/kopia/repo/blob/gcs"
	"github.com/kopia/kopia/repo/blob/s3"

	"github.com/cairn-backup/cairn/internal/location"
)

// Prefix is where a backup location keeps its kopia repository.
const Prefix = "kopia/"

// openStorage opens the kopia/ part of a backup location with kopia's own
// storage for the URL's scheme. Credentials come from the variables the
// location's gocloud.dev driver reads (the standard AWS, Google and Azure
// ones), looked up with env: the location's own, or the environment's.
// Transfers are capped at upload and download bytes per second (0: no
// cap) by cairn's throttle, not kopia's (see throttledType).
func openStorage(ctx context.Context, rawURL string, env location.Env, create bool, upload, download float64) (blob.Storage, error) {
	normalized, err := location.Normalize(rawURL)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(normalized)
	if err != nil {
		return nil, fmt.Errorf("backup location %s: %w", rawURL, err)
	}
	q := u.Query()
	prefix := strings.TrimPrefix(path.Join(strings.TrimPrefix(q.Get("prefix"), "/"), Prefix), "/") + "/"
	var st blob.Storage
	switch u.Scheme {
	case "file":
		dir := filepath.Join(filepath.FromSlash(u.Path), strings.TrimSuffix(Prefix, "/"))
		if create {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("create repository directory: %w", err)
			}
		}
		st, err = filesystem.New(ctx, &filesystem.Options{Path: dir}, create)
	case "s3":
		opts := s3Options(u, prefix, env)
		st, err = s3.New(ctx, opts, create)
	case "gs":
		st, err = gcs.New(ctx, &gcs.Options{
			BucketName: u.Host, Prefix: prefix,
			ServiceAccountCredentialsFile: env("GOOGLE_APPLICATION_CREDENTIALS"),
		}, create)
	case "azblob":
		opts, aerr := azureOptions(u, prefix, env)
		if aerr != nil {
			return nil, fmt.Errorf("backup location %s: %w", location.Display(normalized), aerr)
		}
		st, err = azure.New(ctx, opts, create)
	default:
		return nil, fmt.Errorf("backup location %s: volume data cannot be kept in a %s:// location", location.Display(normalized), u.Scheme)
	}
	if err != nil {
		return nil, fmt.Errorf("open repository storage in %s: %w", location.Display(normalized), err)
	}
	return throttle(st, upload, download), nil
}

// s3Options maps the s3:// URL options gocloud.dev understands (region,
// endpoint, use_path_style, disable_https) onto kopia's S3 storage.
func s3Options(u *url.URL, prefix string, env location.Env) *s3.Options {
	q := u.Query()
	opts := &s3.Options{
		BucketName:      u.Host,
		Prefix:          prefix,
		Region:          q.Get("region"),
		AccessKeyID:     env("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: env("AWS_SECRET_ACCESS_KEY"),
		SessionToken:    env("AWS_SESSION_TOKEN"),
	}
	if opts.Region == "" {
		opts.Region = env("AWS_REGION")
	}
	endpoint := q.Get("endpoint")
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	if e, err := url.Parse(endpoint); err == nil && e.Host != "" {
		opts.DoNotUseTLS = e.Scheme == "http"
		endpoint = e.Host
	}
	if q.Get("disable_https") == "true" {
		opts.DoNotUseTLS = true
	}
	opts.Endpoint = endpoint
	return opts
}

// azureOptions maps an azblob:// URL onto kopia's Azure storage: its
// domain (Azure Stack, sovereign clouds) and protocol, as gocloud.dev
// reads them from the URL or the environment. kopia addresses an account
// by host name (account.domain), so a location that gocloud.dev
// addresses by path (an emulator's: localemu, or a domain of 127.0.0.1
// or localhost) cannot hold volume data.
func azureOptions(u *url.URL, prefix string, env location.Env) (*azure.Options, error) {
	q := u.Query()
	get := func(param, variable string) string {
		if v := q.Get(param); v != "" {
			return v
		}
		return env(variable)
	}
	domain := get("domain", "AZURE_STORAGE_DOMAIN")
	emu := get("localemu", "AZURE_STORAGE_IS_LOCAL_EMULATOR")
	if emu == "true" || emu == "1" || strings.HasPrefix(domain, "127.0.0.1") || strings.HasPrefix(domain, "localhost") {
		return nil, fmt.Errorf("volume data cannot be kept in a local Azure emulator location addressed by path "+
			"(localemu, or domain %q): kopia addresses an account by host name, ACCOUNT.DOMAIN; "+
			"give the emulator a domain under which that name reaches it, e.g. domain=blob.localhost:10000", domain)
	}
	account := get("storage_account", "AZURE_STORAGE_ACCOUNT")
	return &azure.Options{
		Container: u.Host, Prefix: prefix,
		StorageAccount: account, StorageKey: env("AZURE_STORAGE_KEY"), SASToken: env("AZURE_STORAGE_SAS_TOKEN"),
		StorageDomain: domain,
		DoNotUseTLS:   get("protocol", "AZURE_STORAGE_PROTOCOL") == "http",
	}, nil
}
