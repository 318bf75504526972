package main

import (
	"fmt"
	"io"
	"os"

	"github.com/cairn-backup/cairn/api/v1alpha1"
)

// documentRef turns a --NAME file flag and its --NAME-configmap twin into
// a spec's reference: the file's content inline, or the ConfigMap's name.
func documentRef(flag, file, configMap string) (*v1alpha1.DocumentRef, error) {
	switch {
	case file != "" && configMap != "":
		return nil, &usageError{fmt.Errorf("--%s and its ConfigMap flag go one at a time", flag)}
	case configMap != "":
		return &v1alpha1.DocumentRef{ConfigMap: configMap}, nil
	case file == "":
		return nil, nil
	}
	data, err := readDocumentFile(flag, file)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.DocumentRef{Inline: string(data)}, nil
}

// readDocumentFile reads a --NAME file flag's document, bounded: a
// document larger than MaxInlineDocument belongs in a ConfigMap.
func readDocumentFile(flag, file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--%s: %w", flag, err)}
	}
	defer func() { _ = f.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(f, v1alpha1.MaxInlineDocument+1))
	if err != nil {
		return nil, &usageError{fmt.Errorf("--%s: %w", flag, err)}
	}
	if len(data) > v1alpha1.MaxInlineDocument {
		return nil, &usageError{fmt.Errorf("--%s: %s is larger than %d bytes: put it in a ConfigMap", flag, file, v1alpha1.MaxInlineDocument)}
	}
	return data, nil
}
