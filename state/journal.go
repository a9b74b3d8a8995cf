package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/kdlbs/kandev-exec/internal/fsx"
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
	f, err := fsx.OpenFile(s.path(journalFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return fmt.Errorf("creating journal: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fsx.SyncDir(s.dir)
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
	f, err := fsx.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		m.Epoch = NewEpoch()
		if err = s.writeMeta(*m); err == nil {
			if err = s.createJournal(); err == nil {
				f, err = fsx.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
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
	err = eachLineBack(f, size, func(l []byte, at int64) (bool, error) {
		end, line = at+int64(len(l))+1, l
		return false, nil
	})
	return end, line, err
}

// eachLineBack calls fn with each complete line of f's first size bytes
// (without its newline) and the line's offset, the last line first, until
// fn returns false or an error. A last line without its newline is not a
// line yet. It reads backwards a chunk at a time, keeping only the part
// of a line not visited yet, so its cost is that of the lines visited.
func eachLineBack(f *os.File, size int64, fn func(line []byte, at int64) (bool, error)) error {
	var buf []byte // the file's bytes from off on, not visited yet
	off := size
	partial := true // buf may still end in the unfinished last line
	for {
		if partial {
			if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
				buf, partial = buf[:i+1], false
			}
		}
		for !partial && len(buf) > 0 {
			body := buf[:len(buf)-1]
			j := bytes.LastIndexByte(body, '\n')
			if j < 0 && off > 0 {
				break // the line starts in an earlier chunk
			}
			more, err := fn(body[j+1:], off+int64(j)+1)
			if err != nil || !more {
				return err
			}
			buf = buf[:j+1]
		}
		if off == 0 {
			return nil
		}
		n := min(off, tailChunk)
		off -= n
		chunk := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(chunk, off); err != nil {
			return err
		}
		buf = append(chunk, buf...)
	}
}

// Journal returns the entries of the current epoch with Seq > after. It
// reads the journal from its end back to after, so a follower polling for
// what is new pays for what is new, not for the journal's length.
func (s *FileStore) Journal(ctx context.Context, after uint64) ([]Entry, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if s.uninitialized() {
		return []Entry{}, nil // nothing was ever written
	}
	m, err := s.readMeta()
	if err != nil {
		return nil, err
	}
	path := s.path(journalFile)
	f, err := fsx.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return []Entry{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var back []Entry
	err = eachLineBack(f, fi.Size(), func(line []byte, at int64) (bool, error) {
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			return false, fmt.Errorf("corrupt journal %s at byte %d: %w", path, at, err)
		}
		// The file holds one epoch, in sequence order.
		if e.Epoch != m.Epoch || e.Seq <= after {
			return false, nil
		}
		back = append(back, e)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(back))
	for i, e := range back {
		out[len(back)-1-i] = e
	}
	return out, nil
}

// Epoch returns the current journal epoch.
func (s *FileStore) Epoch(ctx context.Context) (uint64, error) {
	if err := s.ready(ctx); err != nil {
		return 0, err
	}
	if s.uninitialized() {
		return 0, nil // no journal yet: its first write starts one
	}
	m, err := s.readMeta()
	return m.Epoch, err
}
