package main

import (
	"fmt"
	"io"
	"os"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// readExtensions reads and validates the --extensions document; no file,
// no extensions.
func readExtensions(file string) ([]v1alpha1.Extension, error) {
	if file == "" {
		return nil, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--extensions: %w", err)}
	}
	defer func() { _ = f.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(f, v1alpha1.MaxInlineDocument+1))
	if err != nil {
		return nil, &usageError{fmt.Errorf("--extensions: %w", err)}
	}
	if len(data) > v1alpha1.MaxInlineDocument {
		return nil, &usageError{fmt.Errorf("--extensions: %s is larger than %d bytes", file, v1alpha1.MaxInlineDocument)}
	}
	exts, err := v1alpha1.ParseExtensions(data)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--extensions %s: %w", file, err)}
	}
	return exts, nil
}
