package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-backup/cairn/starter"
)

// A log download streams: the client reads the first line while the log
// is still being written, so a long log is never held in memory. A log
// the server held back would block the first read until the deadline.
func TestLogsStream(t *testing.T) {
	release := make(chan struct{})
	write := func(ctx context.Context, _ string, w io.Writer) error {
		fmt.Fprintln(w, `{"msg":"first"}`)
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		fmt.Fprintln(w, `{"msg":"second"}`)
		return nil
	}
	srv := httptest.NewServer(logs(newHandler(starter.New(nil, starter.Options{}), nil), write))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound for a broken server, not a verdict
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, mediaNDJSON, resp.Header.Get("Content-Type"))
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	require.NoError(t, err, "the first line arrives before the log is finished")
	assert.Equal(t, "{\"msg\":\"first\"}\n", first)
	close(release)
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Equal(t, "{\"msg\":\"second\"}\n", string(rest))
}

// A failure before the first byte is a JSON error with its status; one
// after it cuts the response, so the client does not take a truncated
// log for a whole one.
func TestLogsFailures(t *testing.T) {
	h := newHandler(starter.New(nil, starter.Options{}), nil)
	notFound := httptest.NewServer(logs(h, func(context.Context, string, io.Writer) error {
		return fmt.Errorf("backup %q: %w", "b", starter.ErrNotFound)
	}))
	defer notFound.Close()
	resp, err := http.Get(notFound.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	broken := httptest.NewServer(logs(h, func(_ context.Context, _ string, w io.Writer) error {
		fmt.Fprintln(w, `{"msg":"first"}`)
		return fmt.Errorf("the location went away")
	}))
	defer broken.Close()
	resp, err = http.Get(broken.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	assert.Error(t, err, "the client sees the download fail")
}
