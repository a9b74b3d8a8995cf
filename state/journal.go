package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// The journal is <dir>/journal.jsonl, one Entry per line, appended (with
// O_APPEND, then fsync) inside the same locked transaction as the record
// write it describes, after that write. A crash can therefore lose the
// entry of the last write, never record a write that did not happen.
//
// A crash mid-append can leave a last line without its newline. Readers
// ignore such a trailing partial line; the next writer, holding the lock,
// truncates it before appending, so sequence numbers never skip.
//
// If the journal file disappears (an operator removed or rotated it), the
// next write starts a new epoch at seq 1; the epoch is written to meta.json
// before the new file exists, so no reader pairs new seqs with the old epoch.

const tailChunk = 4096

func (s *FileStore) createJournal() error {
	f, err := openNoFollow(s.path(journalFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return fmt.Errorf("creating journal: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(s.dir)
}

// journalWriter appends the entries of one transaction. It is opened
// before the transaction writes anything, so a journal that cannot be
// written (unsafe path, corrupt tail) refuses the write instead of
// leaving it unjournaled.
type journalWriter struct {
	f     *os.File
	epoch uint64
	next  uint64 // seq of the next entry
	end   int64  // size after the last complete line
}

func (s *FileStore) openJournal(m *meta) (*journalWriter, error) {
	path := s.path(journalFile)
	f, err := openNoFollow(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		m.Epoch = NewEpoch()
		if err = s.writeMeta(*m); err == nil {
			if err = s.createJournal(); err == nil {
				f, err = openNoFollow(path, os.O_RDWR|os.O_APPEND, 0)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening journal: %w", err)
	}
	j, err := prepareJournal(f, m.Epoch)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return j, nil
}

// prepareJournal finds the last sequence number and truncates a partial
// trailing line left by a crash.
func prepareJournal(f *os.File, epoch uint64) (*journalWriter, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	end, last, err := lastLine(f, fi.Size())
	if err != nil {
		return nil, err
	}
	if end < fi.Size() {
		if err := f.Truncate(end); err != nil {
			return nil, fmt.Errorf("truncating partial last line: %w", err)
		}
	}
	j := &journalWriter{f: f, epoch: epoch, next: 1, end: end}
	if last != nil {
		var prev Entry
		if err := json.Unmarshal(last, &prev); err != nil {
			return nil, fmt.Errorf("corrupt last line: %w", err)
		}
		if prev.Epoch != epoch {
			return nil, fmt.Errorf("last entry has epoch %d, %s says %d", prev.Epoch, metaFile, epoch)
		}
		j.next = prev.Seq + 1
	}
	return j, nil
}

func (j *journalWriter) append(e Entry) error {
	e.Epoch, e.Seq = j.epoch, j.next
	line, err := EncodeJSON(e)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(line); err != nil {
		j.f.Truncate(j.end) // best effort; else the next writer truncates
		return fmt.Errorf("appending to journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("syncing journal: %w", err)
	}
	j.next++
	j.end += int64(len(line))
	return nil
}

func (j *journalWriter) close() { j.f.Close() }

// lastLine returns the offset just past the last complete line and that
// line without its newline (nil when there is none), reading backwards
// from size so appends stay cheap however long the journal grows.
func lastLine(f *os.File, size int64) (end int64, line []byte, err error) {
	var buf []byte // the file's bytes from off to size
	off := size
	for {
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			body := buf[:i]
			if j := bytes.LastIndexByte(body, '\n'); j >= 0 {
				return off + int64(i) + 1, body[j+1:], nil
			}
			if off == 0 {
				return int64(i) + 1, body, nil
			}
		} else if off == 0 {
			return 0, nil, nil
		}
		n := min(off, tailChunk)
		off -= n
		chunk := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(chunk, off); err != nil {
			return 0, nil, err
		}
		buf = append(chunk, buf...)
	}
}

// Journal returns the entries of the current epoch with Seq > after.
func (s *FileStore) Journal(ctx context.Context, after uint64) ([]Entry, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	m, err := s.readMeta()
	if err != nil {
		return nil, err
	}
	b, err := readFileNoFollow(s.path(journalFile))
	if errors.Is(err, fs.ErrNotExist) {
		return []Entry{}, nil
	}
	if err != nil {
		return nil, err
	}
	// A last line without its newline is not an entry (yet).
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	out := []Entry{}
	n := 0
	for line := range bytes.Lines(b) {
		n++
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("corrupt journal %s line %d: %w", s.path(journalFile), n, err)
		}
		if e.Epoch == m.Epoch && e.Seq > after {
			out = append(out, e)
		}
	}
	return out, nil
}

// Epoch returns the current journal epoch.
func (s *FileStore) Epoch(ctx context.Context) (uint64, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	m, err := s.readMeta()
	return m.Epoch, err
}
