package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// recordFile is what records/<kind>/<name>.json holds: the record and, when
// taken, its claim. Keeping them in one file makes a checkpoint (new data
// plus new claim sequence) a single atomic rename.
type recordFile struct {
	Record
	Claim *Claim `json:"claim,omitempty"`
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
		if err := fsx.CheckDir(d); errors.Is(err, fs.ErrNotExist) {
			return nil, notFound
		} else if err != nil {
			return nil, err
		}
	}
	path := s.recordPath(kind, name)
	b, err := fsx.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	var rf recordFile
	if err := json.Unmarshal(b, &rf); err != nil {
		return nil, &CorruptRecordError{Kind: kind, Name: name, Where: path, Reason: "not a record: " + err.Error()}
	}
	if rf.Kind != kind || rf.Name != name {
		reason := fmt.Sprintf("it holds %s %q", rf.Kind, rf.Name)
		if rf.Kind == "" && rf.Name == "" {
			reason = "it names no record"
		}
		if rf.Kind == kind && strings.EqualFold(rf.Name, name) {
			reason += " (a case-insensitive filesystem?)"
		}
		return &rf, &CorruptRecordError{Kind: kind, Name: name, Where: path, Reason: reason}
	}
	return &rf, nil
}

// Locate is the record's file.
func (s *FileStore) Locate(kind Kind, name string) string { return s.recordPath(kind, name) }

// Discard removes a record that cannot be read; see Store.Discard.
func (s *FileStore) Discard(ctx context.Context, kind Kind, name string, ev Event) error {
	if err := ValidateKey(kind, name); err != nil {
		return err
	}
	ev, err := CheckEvent(ev)
	if err != nil {
		return err
	}
	return s.update(ctx, func(t *tx) error {
		rf, err := s.readRecord(kind, name)
		var corrupt *CorruptRecordError
		switch {
		case err == nil:
			return fmt.Errorf("%s %q is readable: delete it at its revision (%d), not by Discard", kind, name, rf.Revision)
		case !errors.As(err, &corrupt):
			return err
		case rf != nil && rf.Kind == kind && strings.EqualFold(rf.Name, name):
			// On a case-insensitive filesystem "Web" and "web" share a
			// file, and the file is web's.
			return err
		}
		if err := fsx.Remove(s.recordPath(kind, name)); err != nil {
			return err
		}
		return t.record(kind, name, ev, 0)
	})
}

func (s *FileStore) writeRecord(rf *recordFile) error {
	if err := ensureDir(s.path(recordsDir)); err != nil {
		return err
	}
	if err := ensureDir(s.kindDir(rf.Kind)); err != nil {
		return err
	}
	b, err := EncodeJSON(rf)
	if err != nil {
		return err
	}
	return fsx.WriteFile(s.recordPath(rf.Kind, rf.Name), b, true)
}

// EncodeJSON is json.Marshal without HTML escaping, so stored data keeps
// the bytes the caller gave (compacted).
func EncodeJSON(v any) ([]byte, error) {
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

// CheckEvent validates a journal event and compacts its detail.
func CheckEvent(ev Event) (Event, error) {
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

// CheckWrite validates the arguments shared by every data write and
// returns the data and event in their stored (compacted) form.
func CheckWrite(kind Kind, name string, data json.RawMessage, ev Event) (json.RawMessage, Event, error) {
	if err := ValidateKey(kind, name); err != nil {
		return nil, ev, err
	}
	data, err := compactJSON("record data", data)
	if err != nil {
		return nil, ev, err
	}
	ev, err = CheckEvent(ev)
	return data, ev, err
}

// Get returns the record, or *NotFoundError.
func (s *FileStore) Get(ctx context.Context, kind Kind, name string) (Record, error) {
	if err := s.ready(ctx); err != nil {
		return Record{}, err
	}
	return s.get(kind, name)
}

func (s *FileStore) get(kind Kind, name string) (Record, error) {
	if err := ValidateKey(kind, name); err != nil {
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
	return s.list(kind)
}

func (s *FileStore) list(kind Kind) ([]Record, error) {
	if err := ValidateKind(kind); err != nil {
		return nil, err
	}
	recs := []Record{}
	for _, d := range []string{s.path(recordsDir), s.kindDir(kind)} {
		if err := fsx.CheckDir(d); errors.Is(err, fs.ErrNotExist) {
			return recs, nil
		} else if err != nil {
			return nil, err
		}
	}
	names, err := s.names(kind)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
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

// Create stores a new record at revision 1; see Store.Create. Like
// Update and Delete, it is a transaction of that one write.
func (s *FileStore) Create(ctx context.Context, kind Kind, name string, data json.RawMessage, ev Event) (out Record, err error) {
	err = s.Txn(ctx, func(tx Tx) error {
		out, err = tx.Create(kind, name, data, ev)
		return err
	})
	return out, err
}

// Update replaces the data at revision expected; see Store.Update.
func (s *FileStore) Update(ctx context.Context, kind Kind, name string, expected uint64, data json.RawMessage, ev Event) (out Record, err error) {
	err = s.Txn(ctx, func(tx Tx) error {
		out, err = tx.Update(kind, name, expected, data, ev)
		return err
	})
	return out, err
}

// Delete removes the record at revision expected; see Store.Delete. The
// journal entry carries the revision that was deleted.
func (s *FileStore) Delete(ctx context.Context, kind Kind, name string, expected uint64, ev Event) error {
	return s.Txn(ctx, func(tx Tx) error { return tx.Delete(kind, name, expected, ev) })
}

// pending is a checked write waiting for its transaction to end well.
type pending struct {
	kind     Kind
	name     string
	rf       *recordFile // nil deletes the record
	ev       Event
	revision uint64 // what the journal entry names
	then     *Event // a second entry of the same write (the claim a CreateClaimed took)
}

func (s *FileStore) apply(t *tx, p *pending) error {
	var err error
	if p.rf == nil {
		err = fsx.Remove(s.recordPath(p.kind, p.name))
	} else {
		err = s.writeRecord(p.rf)
	}
	if err != nil {
		return err
	}
	if err := t.record(p.kind, p.name, p.ev, p.revision); err != nil || p.then == nil {
		return err
	}
	return t.record(p.kind, p.name, *p.then, p.revision)
}

// planCreate checks a Create; a nil pending means the same data is
// already stored, which is not a write.
func (s *FileStore) planCreate(t *tx, kind Kind, name string, data json.RawMessage, ev Event) (*pending, Record, error) {
	data, ev, err := CheckWrite(kind, name, data, ev)
	if err != nil {
		return nil, Record{}, err
	}
	rf, err := s.readRecord(kind, name)
	if err == nil {
		if !bytes.Equal(rf.Data, data) {
			return nil, Record{}, &ConflictError{Kind: kind, Name: name, Actual: rf.Revision}
		}
		return nil, rf.Record, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, Record{}, err
	}
	rf = &recordFile{Record: Record{Kind: kind, Name: name, Revision: 1, SchemaVersion: SchemaVersion, UpdatedAt: t.now, Data: data}}
	return &pending{kind: kind, name: name, rf: rf, ev: ev, revision: 1}, rf.Record, nil
}

func (s *FileStore) planUpdate(t *tx, kind Kind, name string, expected uint64, data json.RawMessage, ev Event) (*pending, Record, error) {
	data, ev, err := CheckWrite(kind, name, data, ev)
	if err != nil {
		return nil, Record{}, err
	}
	rf, err := s.readUnclaimed(t, kind, name, expected)
	if err != nil {
		return nil, Record{}, err
	}
	rf.Revision++
	rf.SchemaVersion = SchemaVersion
	rf.UpdatedAt = t.now
	rf.Data = data
	return &pending{kind: kind, name: name, rf: rf, ev: ev, revision: rf.Revision}, rf.Record, nil
}

func (s *FileStore) planDelete(t *tx, kind Kind, name string, expected uint64, ev Event) (*pending, error) {
	if err := ValidateKey(kind, name); err != nil {
		return nil, err
	}
	ev, err := CheckEvent(ev)
	if err != nil {
		return nil, err
	}
	rf, err := s.readUnclaimed(t, kind, name, expected)
	if err != nil {
		return nil, err
	}
	return &pending{kind: kind, name: name, ev: ev, revision: rf.Revision}, nil
}

// readUnclaimed is the check shared by Update and Delete: the record
// exists, nobody alive holds its claim, and it is at revision expected.
func (s *FileStore) readUnclaimed(t *tx, kind Kind, name string, expected uint64) (*recordFile, error) {
	rf, err := s.readRecord(kind, name)
	if err != nil {
		return nil, err
	}
	if c := rf.Claim; c != nil && live(c, t.now) {
		return nil, &ClaimedError{Kind: kind, Name: name, Holder: c.Holder}
	}
	if rf.Revision != expected {
		return nil, &ConflictError{Kind: kind, Name: name, Expected: expected, Actual: rf.Revision}
	}
	return rf, nil
}
