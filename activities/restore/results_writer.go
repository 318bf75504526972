package restore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairn-backup/cairn/api/v1alpha1"
	"github.com/cairn-backup/cairn/internal/location"
)

// resultsWriter streams results.json one item at a time, in the shape
// v1alpha1.RestoreResults decodes from, so finalizing a restore of a
// million objects holds none of their outcomes in memory. Nothing is
// visible at the key until close succeeds.
type resultsWriter struct {
	w     *location.Writer
	buf   *bufio.Writer
	items int
}

func newResultsWriter(ctx context.Context, loc *location.Location, key string) (*resultsWriter, error) {
	w, err := loc.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	r := &resultsWriter{w: w, buf: bufio.NewWriterSize(w, 1<<16)}
	if _, err := r.buf.WriteString(`{"items": [`); err != nil {
		w.Abort()
		return nil, err
	}
	return r, nil
}

// add writes one item's outcome, one per line.
func (r *resultsWriter) add(o v1alpha1.ItemOutcome) error {
	line, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode outcome: %w", err)
	}
	sep := ",\n"
	if r.items == 0 {
		sep = "\n"
	}
	r.items++
	if _, err := r.buf.WriteString(sep); err != nil {
		return err
	}
	_, err = r.buf.Write(line)
	return err
}

// close ends the item list, writes the rest and makes the file visible.
func (r *resultsWriter) close(skipped []v1alpha1.SkippedResource, warnings []string) error {
	tail := struct {
		Skipped  []v1alpha1.SkippedResource `json:"skippedResources,omitempty"`
		Warnings []string                   `json:"warnings,omitempty"`
	}{skipped, warnings}
	rest, err := json.Marshal(tail)
	if err != nil {
		r.abort()
		return fmt.Errorf("encode results: %w", err)
	}
	// rest is an object: splice its fields after the item list.
	end := "\n]}\n"
	if len(rest) > 2 {
		end = "\n], " + string(rest[1:]) + "\n"
	}
	if _, err := r.buf.WriteString(end); err != nil {
		r.abort()
		return err
	}
	if err := r.buf.Flush(); err != nil {
		r.abort()
		return err
	}
	return r.w.Close()
}

// abort discards what was written.
func (r *resultsWriter) abort() { r.w.Abort() }
