package state

import (
	"bytes"
	"context"
	"fmt"
	"slices"
)

// CopyReport says what Copy did.
type CopyReport struct {
	Epoch            uint64 `json:"epoch"`
	JournalSeq       uint64 `json:"journal_seq"` // the last entry now in both
	EntriesCopied    int    `json:"journal_entries_copied"`
	RecordsCopied    int    `json:"records_copied"`
	RecordsUnchanged int    `json:"records_unchanged"`
	RecordsRemoved   int    `json:"records_removed"`
}

// copyPasses bounds how often Copy starts over because the source moved
// while it copied.
const copyPasses = 5

// importChunk is how many journal entries Copy hands ImportJournal at once.
const importChunk = 1000

// Copy makes dst a copy of src: src's journal with its epoch and sequence
// numbers, and src's records at their revisions and times. dst must be
// empty or an earlier copy of src: an interrupted Copy resumes where it
// stopped, and a finished one changes nothing. Refused (*ClaimedError)
// while either store has a live claim: its holder could write on during
// the copy. If src's journal moves while Copy runs, it copies again, a
// few times, then gives up saying so. progress, if set, hears each step.
func Copy(ctx context.Context, src, dst Copier, progress func(format string, a ...any)) (CopyReport, error) {
	if progress == nil {
		progress = func(string, ...any) {}
	}
	for _, s := range []Copier{src, dst} {
		claims, err := s.LiveClaims(ctx)
		if err != nil {
			return CopyReport{}, err
		}
		if len(claims) > 0 {
			c := claims[0]
			return CopyReport{}, &ClaimedError{Kind: c.Kind, Name: c.Name, Holder: c.Holder}
		}
	}
	var total CopyReport
	for range copyPasses {
		r, err := copyPass(ctx, src, dst, progress)
		total.Epoch, total.JournalSeq = r.Epoch, r.JournalSeq
		total.EntriesCopied += r.EntriesCopied
		total.RecordsCopied += r.RecordsCopied
		total.RecordsRemoved += r.RecordsRemoved
		total.RecordsUnchanged = r.RecordsUnchanged
		if err != nil {
			return total, err
		}
		moved, err := src.Journal(ctx, r.JournalSeq)
		if err != nil {
			return total, err
		}
		epoch, err := src.Epoch(ctx)
		if err != nil {
			return total, err
		}
		if len(moved) == 0 && epoch == r.Epoch {
			return total, nil
		}
		progress("the source changed meanwhile (%d new entries): copying again", len(moved))
	}
	return total, fmt.Errorf("the source store kept changing during %d copies: stop the kandev-exec processes using it, then run the migration again (it resumes)", copyPasses)
}

func copyPass(ctx context.Context, src, dst Copier, progress func(string, ...any)) (CopyReport, error) {
	var r CopyReport
	epoch, err := src.Epoch(ctx)
	if err != nil {
		return r, err
	}
	have, err := src.Journal(ctx, 0)
	if err != nil {
		return r, err
	}
	r.Epoch = epoch
	if n := len(have); n > 0 {
		r.JournalSeq = have[n-1].Seq
	}
	dstEpoch, err := dst.Epoch(ctx)
	if err != nil {
		return r, err
	}
	got, err := dst.Journal(ctx, 0)
	if err != nil {
		return r, err
	}
	switch {
	case dstEpoch != epoch && len(got) > 0:
		return r, fmt.Errorf("the target holds another store's journal (epoch %d, %d entries, the source's is epoch %d): migrate into an empty store",
			dstEpoch, len(got), epoch)
	case len(got) > len(have):
		return r, fmt.Errorf("the target's journal is ahead of the source's (%d entries, the source has %d): it was written to after an earlier copy; migrate into an empty store", len(got), len(have))
	}
	for i, e := range got {
		if s := have[i]; s.Seq != e.Seq || s.Kind != e.Kind || s.Name != e.Name || s.Type != e.Type || s.Revision != e.Revision || !s.At.Equal(e.At) {
			return r, fmt.Errorf("the target's journal differs from the source's at seq %d: it was written to after an earlier copy; migrate into an empty store", e.Seq)
		}
	}
	rest := have[len(got):]
	if dstEpoch != epoch || len(rest) > 0 {
		progress("copying %d journal entries (epoch %d, seq %d to %d)", len(rest), epoch, len(got)+1, len(have))
	}
	for first := true; first || len(rest) > 0; first = false {
		chunk := rest[:min(len(rest), importChunk)]
		if err := dst.ImportJournal(ctx, epoch, chunk); err != nil {
			return r, err
		}
		rest = rest[len(chunk):]
		r.EntriesCopied += len(chunk)
	}
	return r, copyRecords(ctx, src, dst, &r, progress)
}

// copyRecords makes dst's records those of src, kind by kind.
func copyRecords(ctx context.Context, src, dst Copier, r *CopyReport, progress func(string, ...any)) error {
	sk, err := src.Kinds(ctx)
	if err != nil {
		return err
	}
	dk, err := dst.Kinds(ctx)
	if err != nil {
		return err
	}
	kinds := append(slices.Clone(sk), dk...)
	slices.Sort(kinds)
	for _, k := range slices.Compact(kinds) {
		from, err := src.List(ctx, k)
		if err != nil {
			return err
		}
		to, err := dst.List(ctx, k)
		if err != nil {
			return err
		}
		there := map[string]Record{}
		for _, t := range to {
			there[t.Name] = t
		}
		copied := 0
		for _, f := range from {
			t, ok := there[f.Name]
			delete(there, f.Name)
			if ok && sameRecord(f, t) {
				r.RecordsUnchanged++
				continue
			}
			if err := dst.ImportRecord(ctx, f); err != nil {
				return err
			}
			copied++
		}
		for name := range there {
			if err := dst.RemoveRecord(ctx, k, name); err != nil {
				return err
			}
			r.RecordsRemoved++
		}
		if copied > 0 {
			progress("copied %d %s record(s)", copied, k)
		}
		r.RecordsCopied += copied
	}
	return nil
}

func sameRecord(a, b Record) bool {
	return a.Revision == b.Revision && a.SchemaVersion == b.SchemaVersion && a.UpdatedAt.Equal(b.UpdatedAt) && bytes.Equal(a.Data, b.Data)
}
