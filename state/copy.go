package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// Copier is what `store migrate` needs beyond Store to copy one store into
// another as it is (records at their revisions, the journal with its epoch
// and sequence numbers). Both backends implement it.
type Copier interface {
	Store
	// Kinds lists, sorted, the kinds that may hold records: every kind
	// that holds one is listed.
	Kinds(ctx context.Context) ([]Kind, error)
	// LiveClaims lists the unexpired claims. While one is held, a copy
	// could miss what its holder writes next.
	LiveClaims(ctx context.Context) ([]Claim, error)
	// ImportRecord makes the store hold r exactly as given (revision,
	// schema version, time and data), replacing what is there and dropping
	// any claim on it. It writes no journal entry: ImportJournal copies
	// the entries that tell of r. (The sweep record of a sweep that ran
	// nothing is written so too: there is no news to journal.)
	ImportRecord(ctx context.Context, r Record) error
	// RemoveRecord deletes a record and its claim, without a journal
	// entry, for a copy whose source has deleted it since.
	RemoveRecord(ctx context.Context, kind Kind, name string) error
	// ImportJournal appends es as they are (times, revisions, details).
	// They must continue the journal: all of epoch, the current epoch,
	// numbered from one past its last seq without gaps. A store with
	// neither journal entries nor records first adopts epoch.
	ImportJournal(ctx context.Context, epoch uint64, es []Entry) error
}

var _ Copier = (*FileStore)(nil)

// CheckImport validates entries for ImportJournal against a journal of
// epoch whose next seq is next.
func CheckImport(epoch, next uint64, es []Entry) error {
	for i, e := range es {
		if e.Epoch != epoch || e.Seq != next+uint64(i) {
			return fmt.Errorf("journal import: entry %d is epoch %d seq %d, want epoch %d seq %d", i, e.Epoch, e.Seq, epoch, next+uint64(i))
		}
		if err := ValidateKind(e.Kind); err != nil {
			return fmt.Errorf("journal import: entry seq %d: %w", e.Seq, err)
		}
	}
	return nil
}

// Kinds lists the record directories.
func (s *FileStore) Kinds(ctx context.Context) ([]Kind, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if err := fsx.CheckDir(s.path(recordsDir)); errors.Is(err, fs.ErrNotExist) {
		return []Kind{}, nil
	} else if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.path(recordsDir))
	if err != nil {
		return nil, err
	}
	kinds := []Kind{}
	for _, e := range entries {
		if k := Kind(e.Name()); e.IsDir() && ValidateKind(k) == nil {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return kinds, nil
}

// LiveClaims reads every record file for its claim.
func (s *FileStore) LiveClaims(ctx context.Context) ([]Claim, error) {
	kinds, err := s.Kinds(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := []Claim{}
	for _, k := range kinds {
		names, err := s.names(k)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			rf, err := s.readRecord(k, n)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if rf.Claim != nil && live(rf.Claim, now) {
				out = append(out, *rf.Claim)
			}
		}
	}
	return out, nil
}

// names lists the record names of a kind, unsorted, skipping temp files.
func (s *FileStore) names(kind Kind) ([]string, error) {
	entries, err := os.ReadDir(s.kindDir(kind))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && ValidateKey(kind, name) == nil {
			out = append(out, name)
		}
	}
	return out, nil
}

// ImportRecord writes r's file as given; see Copier.
func (s *FileStore) ImportRecord(ctx context.Context, r Record) error {
	if err := ValidateKey(r.Kind, r.Name); err != nil {
		return err
	}
	if r.Revision == 0 {
		return fmt.Errorf("import of %s %q: revision 0", r.Kind, r.Name)
	}
	data, err := compactJSON("record data", r.Data)
	if err != nil {
		return err
	}
	r.Data = data
	return s.update(ctx, func(*tx) error { return s.writeRecord(&recordFile{Record: r}) })
}

// RemoveRecord removes a record file; see Copier.
func (s *FileStore) RemoveRecord(ctx context.Context, kind Kind, name string) error {
	if err := ValidateKey(kind, name); err != nil {
		return err
	}
	return s.update(ctx, func(*tx) error {
		err := fsx.Remove(s.recordPath(kind, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
}

// ImportJournal appends es to journal.jsonl; see Copier.
func (s *FileStore) ImportJournal(ctx context.Context, epoch uint64, es []Entry) error {
	return s.update(ctx, func(t *tx) error {
		j := t.journal
		if j.epoch != epoch {
			if err := s.adoptEpoch(j, epoch); err != nil {
				return err
			}
		}
		if err := CheckImport(epoch, j.next, es); err != nil {
			return err
		}
		for _, e := range es {
			if err := j.append(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// adoptEpoch switches an empty store to epoch, the journal it imports.
func (s *FileStore) adoptEpoch(j *journalWriter, epoch uint64) error {
	if j.next != 1 {
		return fmt.Errorf("journal import: the store's journal is epoch %d with %d entries, not epoch %d", j.epoch, j.next-1, epoch)
	}
	kinds, err := s.Kinds(context.Background())
	if err != nil {
		return err
	}
	for _, k := range kinds {
		if names, err := s.names(k); err != nil || len(names) > 0 {
			if err == nil {
				err = fmt.Errorf("journal import: the store holds %s records but no journal: import into an empty store", k)
			}
			return err
		}
	}
	m, err := s.readMeta()
	if err != nil {
		return err
	}
	m.Epoch = epoch
	if err := s.writeMeta(m); err != nil {
		return err
	}
	j.epoch = epoch
	return nil
}
