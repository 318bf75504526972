package sandbox

import (
	"fmt"
	"os"
)

// openLog opens a component's log file for appending: a restarted sandbox
// keeps the earlier runs' lines.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}
