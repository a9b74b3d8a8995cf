package executor

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// A session's controller token is a credential: it lives beside the
// store like secrets (<state dir>/tokens/<session id>, 0600), never in a
// record, the journal or output.
const tokensDirName = "tokens"

func newToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

func (e *Executor) saveToken(sessionID, token string) error {
	dir, err := e.privateDir(tokensDirName, true)
	if err != nil {
		return err
	}
	return fsx.WriteFile(filepath.Join(dir, sessionID), []byte(token), true)
}

func (e *Executor) loadToken(sessionID string) (string, error) {
	dir, err := e.privateDir(tokensDirName, false)
	if err != nil {
		return "", err
	}
	b, err := fsx.ReadFileMax(filepath.Join(dir, sessionID), MaxSecretSize)
	return string(b), err
}
