package vault

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// A session's controller token is a credential: it lives beside the
// store like secrets (<state dir>/tokens/<session id>, 0600), never in a
// record, the journal or output.
const tokensDirName = "tokens"

// NewToken is a fresh session token.
func NewToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// SaveToken keeps a session's token (0600).
func (vt *Vault) SaveToken(sessionID, token string) error {
	dir, err := vt.privateDir(tokensDirName, true)
	if err != nil {
		return err
	}
	return fsx.WriteFile(filepath.Join(dir, sessionID), []byte(token), true)
}

// LoadToken reads a session's token.
func (vt *Vault) LoadToken(sessionID string) (string, error) {
	dir, err := vt.privateDir(tokensDirName, false)
	if err != nil {
		return "", err
	}
	b, err := fsx.ReadFileMax(filepath.Join(dir, sessionID), MaxSecretSize)
	return string(b), err
}

// RemoveToken forgets a session's token (the session is gone for good);
// one already gone is not an error.
func (vt *Vault) RemoveToken(sessionID string) error {
	dir, err := vt.privateDir(tokensDirName, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, sessionID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
