package main

import (
	"fmt"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// readExtensions reads and validates the --extensions document; no file,
// no extensions.
func readExtensions(file string) ([]v1alpha1.Extension, error) {
	if file == "" {
		return nil, nil
	}
	data, err := readDocumentFile("extensions", file)
	if err != nil {
		return nil, err
	}
	exts, err := v1alpha1.ParseExtensions(data)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--extensions %s: %w", file, err)}
	}
	return exts, nil
}
