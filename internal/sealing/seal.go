package sealing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
)

// magic starts every age file; nothing cairn or Velero writes in plain
// starts with it (gzip, JSON and etcd's bbolt files all start otherwise).
const magic = "age-encryption.org/"

// KeyError is an encrypted object that cannot be read with the keys at
// hand: no key is configured, or none of them is the one it was written
// with. Retrying cannot fix it.
type KeyError struct{ msg string }

func (e *KeyError) Error() string { return e.msg }

// ErrCorrupt is an encrypted object whose bytes are not what was written:
// a chunk fails authentication, or the object is cut short.
var ErrCorrupt = errors.New("encrypted data fails authentication")

// Seal returns a writer that encrypts to the keyring's first key into w;
// Close finishes the last chunk and must be called before w's own Close.
func (k *Keyring) Seal(w io.Writer) (io.WriteCloser, error) {
	enc, err := age.Encrypt(w, k.recipient)
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	return enc, nil
}

// ErrPlaintext is an object stored in plain where it must be encrypted:
// written by someone without the key, as a backup's own writer never is.
var ErrPlaintext = fmt.Errorf("%w: the object is stored unencrypted, where a key is configured", ErrCorrupt)

// OpenSealed is Open for an object that must be encrypted: a plain one
// is ErrPlaintext.
func OpenSealed(r io.Reader, k *Keyring) (io.Reader, error) { return open(r, k, true) }

// Open returns what r holds in plain: r itself when it was not encrypted
// (a Velero-written backup, or one written before a key was configured),
// or its decryption with k. A nil k reads plain objects only.
func Open(r io.Reader, k *Keyring) (io.Reader, error) { return open(r, k, false) }

func open(r io.Reader, k *Keyring, sealedOnly bool) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(len(magic))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch {
	case bytes.Equal(head, []byte(magic)):
	case sealedOnly:
		return nil, ErrPlaintext
	default:
		return br, nil
	}
	if k == nil {
		return nil, &KeyError{msg: "the object is encrypted and no encryption key is configured (--encryption-key)"}
	}
	src := &sourceReader{r: br}
	dec, err := age.Decrypt(src, k.identities...)
	var nomatch *age.NoIdentityMatchError
	switch {
	case errors.As(err, &nomatch):
		return nil, &KeyError{msg: fmt.Sprintf("the object is encrypted with a key that is not configured (configured: %s)", strings.Join(k.ids, ", "))}
	case err != nil && src.err != nil:
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &authReader{r: dec, src: src}, nil
}

// sourceReader remembers the store's own read error, so that what age
// reports otherwise can be told apart as corruption.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		s.err = err
	}
	return n, err
}

// authReader marks what fails while reading the body, other than the
// store itself, as corruption.
type authReader struct {
	r   io.Reader
	src *sourceReader
}

func (a *authReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && a.src.err == nil {
		err = fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return n, err
}
