package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// minioServer is a real S3 server (MinIO, built by `make test` from
// tools/minio) on 127.0.0.1, with its own root credentials.
type minioServer struct {
	t                 *testing.T
	endpoint          string // http://127.0.0.1:PORT
	accessKey, secret string
	addr, dataDir     string
	proc              *proc
}

// minioBin is MinIO's binary: $CAIRN_MINIO (the Makefile sets it), or
// where the Makefile puts it.
func minioBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("CAIRN_MINIO")
	if bin == "" {
		bin = filepath.Join("..", "..", ".cache", "tools", "minio")
	}
	_, err := os.Stat(bin)
	require.NoError(t, err, "MinIO is missing: `make test` builds it (make %s)", ".cache/tools/minio")
	return bin
}

// startMinIO starts a MinIO server whose root user is accessKey, and
// waits until it answers.
func startMinIO(t *testing.T, accessKey, secret string) *minioServer {
	t.Helper()
	addr := freePort(t)
	m := &minioServer{t: t, endpoint: "http://" + addr, accessKey: accessKey, secret: secret, addr: addr, dataDir: t.TempDir()}
	m.start()
	return m
}

// start starts the server on its address and data, and waits until it
// answers.
func (m *minioServer) start() {
	t := m.t
	t.Helper()
	m.proc = startBinary(t, "minio-"+m.accessKey, minioBin(t),
		[]string{"MINIO_ROOT_USER=" + m.accessKey, "MINIO_ROOT_PASSWORD=" + m.secret, "MINIO_BROWSER=off", "MINIO_UPDATE=off"},
		"server", m.dataDir, "--address", m.addr, "--console-address", freePort(t), "--quiet")
	waitServing(t, m.proc, func() error {
		resp, err := http.Get(m.endpoint + "/minio/health/live")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health: %s", resp.Status)
		}
		return nil
	})
}

// client is an S3 client of the server with its root credentials.
func (m *minioServer) client() *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(m.endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(m.accessKey, m.secret, ""),
	})
}

// bucket creates a bucket and returns the location URL of it, which
// carries no credentials.
func (m *minioServer) bucket(name string) string {
	m.t.Helper()
	_, err := m.client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	require.NoError(m.t, err)
	q := url.Values{"endpoint": {m.endpoint}, "use_path_style": {"true"}, "region": {"us-east-1"}}
	return "s3://" + name + "?" + q.Encode()
}

// lockedBucket creates a bucket with Object Lock enabled (and so
// versioning), and returns its location URL.
func (m *minioServer) lockedBucket(name string) string {
	m.t.Helper()
	_, err := m.client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name), ObjectLockEnabledForBucket: aws.Bool(true)})
	require.NoError(m.t, err)
	q := url.Values{"endpoint": {m.endpoint}, "use_path_style": {"true"}, "region": {"us-east-1"}}
	return "s3://" + name + "?" + q.Encode()
}

// keys lists the object keys of bucket under prefix.
func (m *minioServer) keys(bucket, prefix string) []string {
	m.t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(m.client(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(m.t, err)
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// credentialsDir writes the server's credentials as a mounted Secret has
// them: one file per variable.
func (m *minioServer) credentialsDir() string {
	m.t.Helper()
	dir := m.t.TempDir()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": m.accessKey, "AWS_SECRET_ACCESS_KEY": m.secret} {
		require.NoError(m.t, os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o600))
	}
	return dir
}
