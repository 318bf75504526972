package location

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
)

// Env looks up one of a location's credential variables by name.
type Env func(name string) string

// maxCredentialFile bounds one file of a credentials directory.
const maxCredentialFile = 64 << 10

// Env is how the location at rawURL finds its credentials: the files of
// its credentials directory when the catalog gave it one, read afresh so
// a rotated Secret is picked up, else the process environment.
func (o *Opener) Env(rawURL string) (Env, error) {
	dir := o.credentialDir(rawURL)
	if dir == "" {
		return os.Getenv, nil
	}
	vars, err := readCredentials(dir)
	if err != nil {
		return nil, err
	}
	return vars.get, nil
}

func (o *Opener) credentialDir(rawURL string) string {
	if o == nil || len(o.CredentialDirs) == 0 {
		return ""
	}
	normalized, err := Normalize(rawURL)
	if err != nil {
		return ""
	}
	return o.CredentialDirs[normalized]
}

// credentialVars are a location's variables, by name.
type credentialVars map[string]string

func (c credentialVars) get(name string) string { return c[name] }

// readCredentials reads a directory of one file per variable. Entries
// starting with "." are skipped: a mounted Secret keeps its data behind
// ..data links.
func readCredentials(dir string) (credentialVars, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("location credentials: %w", err)
	}
	vars := credentialVars{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("location credentials: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(f, maxCredentialFile+1))
		_ = f.Close() // read only
		if err != nil {
			return nil, fmt.Errorf("location credentials %s: %w", path, err)
		}
		if len(data) > maxCredentialFile {
			return nil, fmt.Errorf("location credentials %s: larger than %d bytes", path, maxCredentialFile)
		}
		vars[e.Name()] = strings.TrimRight(string(data), "\r\n")
	}
	return vars, nil
}

// openS3 opens an s3:// location as gocloud.dev's URL opener does, with
// its URL options, but with the credentials of env instead of the
// process environment's.
func openS3(ctx context.Context, normalized string, env Env) (*blob.Bucket, error) {
	u, err := url.Parse(normalized)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	var opts []func(*s3.Options)
	var bucketOpts s3blob.Options
	for _, key := range []string{"use_path_style", "s3ForcePathStyle", "disable_https", "accelerate"} {
		if !q.Has(key) {
			continue
		}
		value, err := strconv.ParseBool(q.Get(key))
		if err != nil {
			return nil, fmt.Errorf("%s: invalid value for %q: %w", Display(normalized), key, err)
		}
		q.Del(key)
		switch key {
		case "disable_https":
			opts = append(opts, func(o *s3.Options) { o.EndpointOptions.DisableHTTPS = value })
		case "accelerate":
			opts = append(opts, func(o *s3.Options) { o.UseAccelerate = value })
		default:
			opts = append(opts, func(o *s3.Options) { o.UsePathStyle = value })
		}
	}
	if v := q.Get("ssetype"); v != "" {
		bucketOpts.EncryptionType = types.ServerSideEncryption(v)
		q.Del("ssetype")
	}
	if v := q.Get("kmskeyid"); v != "" {
		bucketOpts.KMSEncryptionID = v
		q.Del("kmskeyid")
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("open backup location %s: %w", Display(normalized), err)
	}
	if env("AWS_ACCESS_KEY_ID") == "" || env("AWS_SECRET_ACCESS_KEY") == "" {
		return nil, fmt.Errorf("backup location %s: its credentials have no AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", Display(normalized))
	}
	cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(
		env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")))
	if cfg.Region == "" {
		cfg.Region = env("AWS_REGION")
	}
	bucketOpts.RequestChecksumCalculation = cfg.RequestChecksumCalculation
	return s3blob.OpenBucket(ctx, s3.NewFromConfig(cfg, opts...), u.Host, &bucketOpts)
}
