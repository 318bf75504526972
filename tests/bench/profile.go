package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/cairn-backup/cairn/internal/clock"
)

// profiling is where a CPU profile of a worker goes, how long it runs,
// and the address the worker serves its profiler on; no path, no
// profile.
type profiling struct {
	path    string
	seconds int
	addr    string
	// timeline: print the first run's history, event by event.
	timeline bool
}

// listen picks the address of the next worker's profiler.
func (p *profiling) listen() error {
	if p.path == "" {
		return nil
	}
	addr, err := freeAddr()
	p.addr = addr
	return err
}

// workerArgs are the flags that make the worker serve its profiler.
func (p *profiling) workerArgs() []string {
	if p.path == "" {
		return nil
	}
	return []string{"--profiler-address", p.addr}
}

// start waits until the worker's profiler answers, then captures a CPU
// profile in the background; wait returns once it is written (at once
// when no profile is asked for).
func (p *profiling) start(ctx context.Context) (wait func() error, err error) {
	if p.path == "" {
		return func() error { return nil }, nil
	}
	if err := profilerUp(ctx, p.addr); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- fetchProfile(ctx, p.addr, p.path, p.seconds) }()
	return func() error { return <-done }, nil
}

// profilerUp waits for a worker just started to serve its profiler, for
// at most profilerStartBound.
func profilerUp(ctx context.Context, addr string) error {
	deadline := time.Now().Add(profilerStartBound)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/", nil)
		if err != nil {
			return err
		}
		resp, last := http.DefaultClient.Do(req)
		if last == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("answered %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("worker profiler on %s: not up within %s: %w", addr, profilerStartBound, last)
		}
		if err := clock.Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// profilerStartBound bounds the wait for a worker's profiler: a bound for
// a worker that never starts, not a verdict.
const profilerStartBound = time.Minute

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
