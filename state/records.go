package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// recordFile is what records/<kind>/<name>.json holds: the record and, when
// taken, its claim. Keeping them in one file makes a checkpoint (new data
// plus new claim sequence) a single atomic rename.
type recordFile struct {
	Record
	Claim *storedClaim `json:"claim,omitempty"`
}

func (s *FileStore) kindDir(kind Kind) string { return s.path(recordsDir, string(kind)) }

func (s *FileStore) recordPath(kind Kind, name string) string {
	return s.path(recordsDir, string(kind), name+".json")
}

// readRecord loads one record file without following symlinks anywhere
// below the store directory.
func (s *FileStore) readRecord(kind Kind, name string) (*recordFile, error) {
	notFound := &NotFoundError{Kind: kind, Name: name}
	for _, d := range []string{s.path(recordsDir), s.kindDir(kind)} {
		if err := checkDir(d); errors.Is(err, fs.ErrNotExist) {
			return nil, notFound
		} else if err != nil {
			return nil, err
		}
	}
	path := s.recordPath(kind, name)
	b, err := readFileNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	var rf recordFile
	if err := json.Unmarshal(b, &rf); err != nil {
		return nil, fmt.Errorf("corrupt record %s: %w", path, err)
	}
	// On a case-insensitive filesystem "Web" and "web" share a file.
	if rf.Kind != kind || rf.Name != name {
		return nil, fmt.Errorf("record file %s holds %s %q, not %s %q (case-insensitive filesystem?)", path, rf.Kind, rf.Name, kind, name)
	}
	return &rf, nil
}

func (s *FileStore) writeRecord(rf *recordFile) error {
	if err := ensureDir(s.path(recordsDir)); err != nil {
		return err
	}
	if err := ensureDir(s.kindDir(rf.Kind)); err != nil {
		return err
	}
	b, err := encodeJSON(rf)
	if err != nil {
		return err
	}
	return writeFileAtomic(s.recordPath(rf.Kind, rf.Name), b, true)
}

// encodeJSON is json.Marshal without HTML escaping, so stored data keeps
// the bytes the caller gave (compacted).
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// compactJSON validates raw JSON and strips insignificant whitespace, the
// form in which data is stored and compared.
func compactJSON(what string, raw json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	return buf.Bytes(), nil
}

func checkEvent(ev Event) (Event, error) {
	if ev.Type == "" {
		return ev, errors.New("journal event has no type")
	}
	if len(ev.Detail) > 0 {
		d, err := compactJSON("event detail", ev.Detail)
		if err != nil {
			return ev, err
		}
		ev.Detail = d
	}
	return ev, nil
}

// checkWrite validates the arguments shared by every data write.
func checkWrite(kind Kind, name string, data json.RawMessage, ev Event) (json.RawMessage, Event, error) {
	if err := validateKey(kind, name); err != nil {
		return nil, ev, err
	}
	data, err := compactJSON("record data", data)
	if err != nil {
		return nil, ev, err
	}
	ev, err = checkEvent(ev)
	return data, ev, err
}

// Get returns the record, or *NotFoundError.
func (s *FileStore) Get(ctx context.Context, kind Kind, name string) (Record, error) {
	if err := s.ready(ctx); err != nil {
		return Record{}, err
	}
	if err := validateKey(kind, name); err != nil {
		return Record{}, err
	}
	rf, err := s.readRecord(kind, name)
	if err != nil {
		return Record{}, err
	}
	return rf.Record, nil
}

// List returns the records of kind sorted by name, [] when there are none.
func (s *FileStore) List(ctx context.Context, kind Kind) ([]Record, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if err := validateKind(kind); err != nil {
		return nil, err
	}
	recs := []Record{}
	for _, d := range []string{s.path(recordsDir), s.kindDir(kind)} {
		if err := checkDir(d); errors.Is(err, fs.ErrNotExist) {
			return recs, nil
		} else if err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(s.kindDir(kind))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || validateKey(kind, name) != nil {
			continue // temp files and strangers
		}
		rf, err := s.readRecord(kind, name)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since ReadDir
		}
		if err != nil {
			return nil, err
		}
		recs = append(recs, rf.Record)
	}
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.Name, b.Name) })
	return recs, nil
}

// Create stores a new record at revision 1; see Store.Create.
func (s *FileStore) Create(ctx context.Context, kind Kind, name string, data json.RawMessage, ev Event) (Record, error) {
	data, ev, err := checkWrite(kind, name, data, ev)
	if err != nil {
		return Record{}, err
	}
	var out Record
	err = s.update(ctx, func(t *tx) error {
		rf, err := s.readRecord(kind, name)
		if err == nil {
			if !bytes.Equal(rf.Data, data) {
				return &ConflictError{Kind: kind, Name: name, Actual: rf.Revision}
			}
			out = rf.Record
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		rf = &recordFile{Record: Record{Kind: kind, Name: name, Revision: 1, SchemaVersion: SchemaVersion, UpdatedAt: t.now, Data: data}}
		if err := s.writeRecord(rf); err != nil {
			return err
		}
		out = rf.Record
		return t.record(kind, name, ev, rf.Revision)
	})
	return out, err
}

// Update replaces the data at revision expected; see Store.Update.
func (s *FileStore) Update(ctx context.Context, kind Kind, name string, expected uint64, data json.RawMessage, ev Event) (Record, error) {
	data, ev, err := checkWrite(kind, name, data, ev)
	if err != nil {
		return Record{}, err
	}
	var out Record
	err = s.update(ctx, func(t *tx) error {
		rf, err := s.readUnclaimed(t, kind, name, expected)
		if err != nil {
			return err
		}
		rf.Revision++
		rf.SchemaVersion = SchemaVersion
		rf.UpdatedAt = t.now
		rf.Data = data
		if err := s.writeRecord(rf); err != nil {
			return err
		}
		out = rf.Record
		return t.record(kind, name, ev, rf.Revision)
	})
	return out, err
}

// Delete removes the record at revision expected; see Store.Delete. The
// journal entry carries the revision that was deleted.
func (s *FileStore) Delete(ctx context.Context, kind Kind, name string, expected uint64, ev Event) error {
	if err := validateKey(kind, name); err != nil {
		return err
	}
	ev, err := checkEvent(ev)
	if err != nil {
		return err
	}
	return s.update(ctx, func(t *tx) error {
		rf, err := s.readUnclaimed(t, kind, name, expected)
		if err != nil {
			return err
		}
		if err := removeDurable(s.recordPath(kind, name)); err != nil {
			return err
		}
		return t.record(kind, name, ev, rf.Revision)
	})
}

// readUnclaimed is the check shared by Update and Delete: the record
// exists, nobody alive holds its claim, and it is at revision expected.
func (s *FileStore) readUnclaimed(t *tx, kind Kind, name string, expected uint64) (*recordFile, error) {
	rf, err := s.readRecord(kind, name)
	if err != nil {
		return nil, err
	}
	if c := rf.Claim; c != nil && c.live(t.now) {
		return nil, &ClaimedError{Kind: kind, Name: name, Holder: c.Holder}
	}
	if rf.Revision != expected {
		return nil, &ConflictError{Kind: kind, Name: name, Expected: expected, Actual: rf.Revision}
	}
	return rf, nil
}
