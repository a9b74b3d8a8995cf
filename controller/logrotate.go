package controller

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// The log is bounded: past LogRotateAt bytes it is replaced by its newest
// LogKeep bytes (from a line's start), and that starts a new generation.
const (
	LogRotateAt = 16 << 20
	LogKeep     = 8 << 20
)

// genFile holds the log's generation, for readers when the controller is
// gone.
const genFile = "controller.log.gen"

// genRecord is genFile's content.
type genRecord struct {
	Generation string `json:"generation"`
}

// rotation is how a generation was replaced: by next, whose first
// carried bytes are the old one's last; size is the old one's length.
type rotation struct {
	next    string
	carried int64
	size    int64
}

// newGeneration is generation n with a random part, so that a log
// replaced behind the controller's back never matches one seen before:
// "<n>-<8 hex digits>".
func newGeneration(n int) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strconv.Itoa(n) + "-" + hex.EncodeToString(b)
}

// generationNumber is the counter of a generation, 0 when it has none.
func generationNumber(g string) int {
	n, _ := strconv.Atoi(strings.SplitN(g, "-", 2)[0])
	return n
}

// ReadGeneration reads the log's generation from a session dir.
func ReadGeneration(sessionDir string) (string, error) {
	b, err := fsx.ReadFile(filepath.Join(sessionDir, genFile))
	if err != nil {
		return "", err
	}
	return DecodeGeneration(b)
}

// GenerationFile is where a session dir keeps its log's generation.
func GenerationFile(sessionDir string) string { return filepath.Join(sessionDir, genFile) }

// DecodeGeneration reads the generation from the file's content.
func DecodeGeneration(b []byte) (string, error) {
	var g genRecord
	if err := json.Unmarshal(b, &g); err != nil {
		return "", fmt.Errorf("decode %s: %w", genFile, err)
	}
	return g.Generation, nil
}

// setGenerationLocked records gen as the log's generation (under logMu).
func (s *server) setGenerationLocked(gen string) error {
	s.logGen = gen
	return writeJSONAtomic(s.dir, genFile, genRecord{Generation: gen})
}

// rotateLocked replaces the log by its newest part once it has grown
// past the bound (under logMu). The new file is complete before it is
// renamed over the old one, so a reader sees one generation or the other.
func (s *server) rotateLocked() {
	fi, err := s.log.Stat()
	if err != nil || fi.Size() < s.rotateAt {
		return
	}
	size := fi.Size()
	keep, err := s.tailToKeep(size)
	if err != nil {
		return // the log grows on; the next write tries again
	}
	path := filepath.Join(s.dir, logFile)
	tmp := path + ".new"
	_ = os.Remove(tmp)
	f, err := fsx.OpenFile(tmp, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		if _, err = f.Write(keep); err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			f.Close()
			_ = os.Remove(tmp)
		}
	}
	if err != nil {
		return
	}
	old, next := s.logGen, newGeneration(generationNumber(s.logGen)+1)
	s.rotations[old] = rotation{next: next, carried: int64(len(keep)), size: size}
	s.log.Close()
	s.log = f
	s.logw.w = s.sinkFor(f)
	_ = s.setGenerationLocked(next)
	line := fmt.Sprintf("[controller] %s log rotated at %d bytes: generation %s follows %s, keeping its last %d bytes\n",
		timestamp(), size, next, old, len(keep))
	_, _ = s.logw.Write([]byte(line))
}

// tailToKeep reads the newest part of the log that rotation keeps,
// starting after a newline so that no line is cut.
func (s *server) tailToKeep(size int64) ([]byte, error) {
	from := max(size-s.logKeep, 0)
	b := make([]byte, size-from)
	if _, err := s.log.ReadAt(b, from); err != nil && err != io.EOF {
		return nil, err
	}
	if from > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b, nil
}

// sinkFor is what the log writer writes to for the log file f.
func (s *server) sinkFor(f *os.File) io.Writer {
	if s.logSink != nil {
		return s.logSink(f)
	}
	return f
}
