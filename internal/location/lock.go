package location

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// LockMode is an S3 Object Lock retention mode.
type LockMode string

const (
	// LockCompliance retention cannot be shortened or removed by anyone,
	// the bucket's root user included, until it ends.
	LockCompliance LockMode = "COMPLIANCE"
	// LockGovernance retention can be removed by a user granted
	// s3:BypassGovernanceRetention, and by nobody else.
	LockGovernance LockMode = "GOVERNANCE"
)

// MinLockPeriod is the shortest immutability a location may declare.
// kopia refuses a shorter retention for its blobs, and extends the lock
// of the blobs still in use at each full maintenance (every 24 h), which
// it only does when the period is at least a day longer than that cycle.
const MinLockPeriod = 48 * time.Hour

// Lock is a location's immutability: every object of a finished backup,
// and every blob of its volume data repository, is written with S3
// Object Lock retention for Period in Mode.
type Lock struct {
	Period time.Duration `json:"period"`
	Mode   LockMode      `json:"mode"`
}

// Until is when an object written at t stops being locked.
func (l Lock) Until(t time.Time) time.Time { return t.Add(l.Period).UTC() }

// String is the lock as a user reads it: "30d compliance".
func (l Lock) String() string {
	return FormatPeriod(l.Period) + " " + strings.ToLower(string(l.Mode))
}

// FormatPeriod writes a period in whole days when it is whole days.
func FormatPeriod(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// ParseLockPeriod reads an immutability period: a number of days ("30d")
// or a Go duration ("720h"), at least MinLockPeriod.
func ParseLockPeriod(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("immutable=%s: want days (30d) or a duration (720h)", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("immutable=%s: want days (30d) or a duration (720h)", s)
		}
	}
	if d < MinLockPeriod {
		return 0, fmt.Errorf("immutable=%s: at least %s (kopia extends the lock of the volume data it still needs once a day)", s, FormatPeriod(MinLockPeriod))
	}
	return d, nil
}

// ParseLockMode reads lock-mode=compliance|governance.
func ParseLockMode(s string) (LockMode, error) {
	switch m := LockMode(strings.ToUpper(s)); m {
	case LockCompliance, LockGovernance:
		return m, nil
	}
	return "", fmt.Errorf("lock-mode=%s: want compliance or governance", s)
}

// lockedDocuments are the objects of a finished backup. What a backup
// writes while it runs (.work/, .logs/) is deleted by its cleanup, so it
// is not locked.
var lockedDocuments = map[string]bool{
	"backup.json": true, "manifest.json": true, "resources.tar.gz": true, "results.json": true,
	"logs.jsonl.gz": true, "volumes.json": true, "operations.json": true,
}

// locked reports whether key is an object of a finished backup: directly
// in backups/<name>/ and one of its documents.
func locked(key string) bool {
	rest, ok := strings.CutPrefix(key, backupsRoot)
	if !ok {
		return false
	}
	dir, file := path.Split(rest)
	return dir != "" && !strings.Contains(strings.TrimSuffix(dir, "/"), "/") && lockedDocuments[file]
}

// ErrImmutable is a backup whose objects are locked: deleting it before
// the lock ends is refused.
var ErrImmutable = errors.New("immutable")

// ImmutableError says until when a backup cannot be deleted.
type ImmutableError struct {
	Backup string
	Until  time.Time
}

func (e *ImmutableError) Error() string {
	return fmt.Sprintf("backup %s is immutable until %s (object lock): it can be deleted after that", e.Backup, e.Until.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrImmutable) hold.
func (e *ImmutableError) Is(target error) bool { return target == ErrImmutable }
