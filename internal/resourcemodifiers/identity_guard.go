package resourcemodifiers

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// errMovesObject is a patch that would give an object another name or
// namespace. A restore decides where an object goes (its namespace
// mapping, checked against the caller's rights before it starts); a
// modifier that moved it could land it where nobody asked for it.
var errMovesObject = errors.New("a resource modifier may not change metadata.name or metadata.namespace (use namespaceMapping to restore into another namespace)")

// identityPaths are the pointers whose change renames or moves an object:
// the whole document, metadata, and its name and namespace.
var identityPaths = [][]string{{}, {"metadata"}, {"metadata", "name"}, {"metadata", "namespace"}}

// touchesIdentity reports whether writing at pointer tokens can change an
// object's name or namespace: it is one of identityPaths.
func touchesIdentity(tokens []string) bool {
	for _, p := range identityPaths {
		if slices.Equal(tokens, p) {
			return true
		}
	}
	return false
}

// checkJSONPatchIdentity refuses an operation that writes the name or
// namespace: add, replace, remove, copy at such a path, or a move from or
// to one. test only reads.
func checkJSONPatchIdentity(kind string, path, from []string) error {
	if kind == "test" {
		return nil
	}
	if touchesIdentity(path) || (kind == "move" && touchesIdentity(from)) {
		return errMovesObject
	}
	return nil
}

// checkPatchDataIdentity refuses a merge or strategic patch that sets
// metadata to anything but an object, or names metadata.name or
// metadata.namespace (setting, or deleting with null).
func checkPatchDataIdentity(patch []byte) error {
	var object map[string]json.RawMessage
	if err := json.Unmarshal(patch, &object); err != nil {
		return fmt.Errorf("patchData must be an object: %w", err)
	}
	raw, ok := object["metadata"]
	if !ok {
		return nil
	}
	var metadata map[string]json.RawMessage
	if err := json.Unmarshal(raw, &metadata); err != nil || metadata == nil {
		return errMovesObject
	}
	if _, ok := metadata["name"]; ok {
		return errMovesObject
	}
	if _, ok := metadata["namespace"]; ok {
		return errMovesObject
	}
	return nil
}
