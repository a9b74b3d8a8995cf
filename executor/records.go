package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// Declarative records (profiles, agent presets) share one apply: create,
// or compare and update at the read revision, reporting what changed by
// name only.

// Apply actions.
const (
	ActionCreated   = "created"
	ActionUpdated   = "updated"
	ActionUnchanged = "unchanged"
)

// ApplyResult is what `profile apply` and `agent apply` report. It names
// fields and env keys, never values: a literal may be a pasted secret.
type ApplyResult struct {
	Kind       string   `json:"kind"`
	Name       string   `json:"name"`
	Action     string   `json:"action"`
	Revision   uint64   `json:"revision"`
	Changed    []string `json:"changed"` // top-level fields, sorted
	EnvAdded   []string `json:"env_added"`
	EnvRemoved []string `json:"env_removed"`
	EnvChanged []string `json:"env_changed"`
	DryRun     bool     `json:"dry_run"` // nothing was written: Action is what an apply would do
}

// UsageError is bad input caught here rather than by flag parsing: an
// unusable secret value, a bad port (exit code 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// applyRecord creates the record, or updates it if any field differs,
// in one transaction with check (nil: none), so what check verified
// still holds when the write lands. A dry run reads and compares the
// same way and writes nothing; Revision is then the stored one (0 for a
// record it would create).
func (e *Executor) applyRecord(ctx context.Context, kind state.Kind, name string, v any, dryRun bool, check func(state.Tx) error) (ApplyResult, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return ApplyResult{}, err
	}
	var res ApplyResult
	err = e.cfg.Store.Txn(ctx, func(tx state.Tx) error {
		res = ApplyResult{Kind: string(kind), Name: name, Changed: []string{},
			EnvAdded: []string{}, EnvRemoved: []string{}, EnvChanged: []string{}, DryRun: dryRun}
		if check != nil {
			if err := check(tx); err != nil {
				return err
			}
		}
		old, err := tx.Get(kind, name)
		err = records.WithRemedy(err)
		if errors.Is(err, state.ErrNotFound) && dryRun {
			res.Action = ActionCreated
			return nil
		}
		if errors.Is(err, state.ErrNotFound) {
			rec, err := tx.Create(kind, name, data, state.Event{Type: string(kind) + ".created"})
			res.Action, res.Revision = ActionCreated, rec.Revision
			return err
		}
		if err != nil {
			return err
		}
		if err := diffRecord(old.Data, data, &res); err != nil {
			return records.WithRemedy(&state.CorruptRecordError{Kind: kind, Name: name, Where: e.cfg.Store.Locate(kind, name),
				Reason: "its data does not decode: " + err.Error()})
		}
		if len(res.Changed) == 0 || dryRun {
			res.Action, res.Revision = ActionUnchanged, old.Revision
			if len(res.Changed) > 0 {
				res.Action = ActionUpdated
			}
			return nil
		}
		detail, _ := json.Marshal(map[string][]string{"changed": res.Changed})
		rec, err := tx.Update(kind, name, old.Revision, data, state.Event{Type: string(kind) + ".updated", Detail: detail})
		res.Action, res.Revision = ActionUpdated, rec.Revision
		return err
	})
	return res, err
}

// diffRecord compares two stored documents field by field, and the "env"
// field key by key.
func diffRecord(oldData, newData []byte, res *ApplyResult) error {
	var o, n map[string]json.RawMessage
	if err := json.Unmarshal(oldData, &o); err != nil {
		return err
	}
	if err := json.Unmarshal(newData, &n); err != nil {
		return err
	}
	for _, f := range slices.Sorted(maps.Keys(n)) {
		if string(o[f]) != string(n[f]) {
			res.Changed = append(res.Changed, f)
		}
	}
	for f := range o {
		if _, ok := n[f]; !ok {
			res.Changed = append(res.Changed, f)
		}
	}
	slices.Sort(res.Changed)
	if !slices.Contains(res.Changed, "env") {
		return nil
	}
	var oe, ne []profiles.EnvEntry
	if err := json.Unmarshal(o["env"], &oe); err != nil {
		return err
	}
	if err := json.Unmarshal(n["env"], &ne); err != nil {
		return err
	}
	before := map[string]profiles.EnvEntry{}
	for _, x := range oe {
		before[x.Key] = x
	}
	for _, x := range ne {
		prev, ok := before[x.Key]
		switch {
		case !ok:
			res.EnvAdded = append(res.EnvAdded, x.Key)
		case prev != x:
			res.EnvChanged = append(res.EnvChanged, x.Key)
		}
		delete(before, x.Key)
	}
	// Appended, so that none removed is [] in JSON, not null.
	res.EnvRemoved = append(res.EnvRemoved, slices.Sorted(maps.Keys(before))...)
	slices.Sort(res.EnvAdded)
	slices.Sort(res.EnvChanged)
	return nil
}

// withMeta appends the record's revision and update time to a document's
// JSON object, keeping the document's own field order.
func withMeta(doc any, rev uint64, at time.Time) ([]byte, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	meta, _ := json.Marshal(struct {
		Revision  uint64    `json:"revision"`
		UpdatedAt time.Time `json:"updated_at"`
	}{rev, at.UTC().Truncate(time.Second)}) // JSON times are to the second
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("want a JSON object, got %.20s", b)
	}
	if len(b) == 2 {
		return meta, nil
	}
	return append(append(b[:len(b)-1], ','), meta[1:]...), nil
}
