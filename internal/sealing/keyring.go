// Package sealing encrypts what cairn writes to a backup location outside
// kopia's repository, with age (age-encryption.org/v1): a streaming,
// authenticated format whose chunks are checked as they are read, so a
// flipped or cut byte is an error, never garbled data.
package sealing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"filippo.io/age"
)

// Keyring is the keys a process holds. The first one encrypts; every one
// decrypts, which is how a key is rotated: put the new key first and keep
// the old ones below it for as long as backups written with them remain.
type Keyring struct {
	recipient  age.Recipient
	identities []age.Identity
	ids        []string
}

// ParseKeyring reads an age identity file: one secret key per line
// (AGE-SECRET-KEY-1... or AGE-SECRET-KEY-PQ-1...), blank lines and lines
// starting with # ignored.
func ParseKeyring(data []byte) (*Keyring, error) {
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	k := &Keyring{identities: ids}
	for i, id := range ids {
		var rcpt age.Recipient
		var public string
		switch key := id.(type) {
		case *age.HybridIdentity:
			rcpt, public = key.Recipient(), key.Recipient().String()
		case *age.X25519Identity:
			rcpt, public = key.Recipient(), key.Recipient().String()
		default:
			return nil, fmt.Errorf("encryption key %d: only native age keys (X25519 or hybrid) are supported", i+1)
		}
		if i == 0 {
			k.recipient = rcpt
		}
		k.ids = append(k.ids, KeyID(public))
	}
	return k, nil
}

// LoadKeyring reads the identity file at path.
func LoadKeyring(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	k, err := ParseKeyring(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// KeyID names a key without revealing it: the first 16 hex digits of the
// SHA-256 of its public recipient line (what `age-keygen -y` prints).
func KeyID(recipient string) string {
	sum := sha256.Sum256([]byte(recipient))
	return hex.EncodeToString(sum[:8])
}

// ID is the ID of the key that encrypts.
func (k *Keyring) ID() string { return k.ids[0] }

// IDs are the IDs of every key, the encrypting one first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

// Generate returns a new identity file holding one hybrid (post-quantum)
// key, with its ID in a comment.
func Generate() ([]byte, error) {
	id, err := age.GenerateHybridIdentity()
	if err != nil {
		return nil, fmt.Errorf("generate encryption key: %w", err)
	}
	public := id.Recipient().String()
	return fmt.Appendf(nil, "# cairn encryption key %s\n%s\n", KeyID(public), id.String()), nil
}

// EnsureKeyFile creates path with a new key, readable by its owner only,
// unless it exists; it returns the keyring the file holds.
func EnsureKeyFile(path string) (*Keyring, error) {
	data, err := Generate()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, os.ErrExist):
		return LoadKeyring(path)
	case err != nil:
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return nil, errors.Join(fmt.Errorf("encryption key %s: %w", path, err), f.Close())
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("encryption key %s: %w", path, err)
	}
	return ParseKeyring(data)
}
