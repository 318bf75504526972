package csistate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Control holds the knobs a test turns to make the driver misbehave. The
// driver reads the control file on every call, so a change applies to the
// next call. On disk (all fields optional):
//
//	{"snapshotDelay": "30s", "snapshotError": "disk on fire", "createVolumeError": ""}
type Control struct {
	// SnapshotDelay keeps a snapshot reporting ready_to_use=false until this
	// long after it was cut (in CreateSnapshot and ListSnapshots alike).
	// Once a call has seen it ready it stays ready.
	SnapshotDelay Duration `json:"snapshotDelay,omitempty"`
	// SnapshotError makes CreateSnapshot of a snapshot that does not exist
	// yet fail with codes.Internal and this message, recording nothing.
	// Repeats for an existing snapshot still succeed.
	SnapshotError string `json:"snapshotError,omitempty"`
	// CreateVolumeError makes CreateVolume of a volume that does not exist
	// yet fail with codes.Internal and this message, recording nothing.
	CreateVolumeError string `json:"createVolumeError,omitempty"`
}

// WriteControl replaces the control file of the state directory dir
// atomically, creating dir if needed.
func WriteControl(dir string, c Control) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("csistate: %w", err)
	}
	return writeJSON(Layout{Dir: dir}.ControlPath(), c)
}

// ReadControl reads the control file of the state directory dir; a missing
// file is the zero Control.
func ReadControl(dir string) (Control, error) {
	var c Control
	path := Layout{Dir: dir}.ControlPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("csistate: read control: %w", err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return Control{}, fmt.Errorf("csistate: decode %s: %w", path, err)
	}
	return c, nil
}

// Duration is a time.Duration written in JSON as a string like "1m30s".
// Decoding also accepts "" (zero) and a number of nanoseconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var n int64
		if json.Unmarshal(data, &n) != nil {
			return fmt.Errorf("duration %s: want a string like \"30s\"", data)
		}
		*d = Duration(n)
		return nil
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}
