package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
)

// workerProfile captures a CPU profile of seconds from the worker's
// profiler at addr into path, in the background; wait returns once it is
// written.
func workerProfile(ctx context.Context, addr, path string, seconds int) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- fetchProfile(ctx, addr, path, seconds) }()
	return func() error { return <-done }
}

func fetchProfile(ctx context.Context, addr, path string, seconds int) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("worker profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("worker profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("worker profile: %w", err)
	}
	return f.Close()
}
