package state

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// meta.json: the schema gate and the journal epoch.
type meta struct {
	SchemaVersion int       `json:"schema_version"`
	Epoch         uint64    `json:"epoch"`
	CreatedAt     time.Time `json:"created_at"`
}

// Why Open refuses a store; OpenError says what to do about it.
var (
	errCorruptMeta = errors.New("corrupt " + metaFile)
	errNoMeta      = errors.New(journalFile + " but no " + metaFile)
)

func (s *FileStore) readMeta() (meta, error) {
	var m meta
	b, err := fsx.ReadFile(s.path(metaFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("state store %s: %w: %v", s.dir, errCorruptMeta, err)
	}
	if m.SchemaVersion > SchemaVersion {
		return m, &SchemaError{Path: s.dir, Found: m.SchemaVersion}
	}
	if m.SchemaVersion < 1 || m.Epoch == 0 {
		return m, fmt.Errorf("state store %s: %w: schema_version %d, epoch %d", s.dir, errCorruptMeta, m.SchemaVersion, m.Epoch)
	}
	return m, nil
}

func (s *FileStore) writeMeta(m meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return fsx.WriteFile(s.path(metaFile), append(b, '\n'), true)
}

// NewEpoch is random so that a re-created journal can never be mistaken
// for the old one; it stays below 2^53 so JSON consumers that read
// numbers as doubles (jq, JavaScript) keep it exact.
func NewEpoch() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])>>11 | 1
}
