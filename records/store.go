package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/state"
)

// Kinds of the declarative records, kept here with the others so that
// every reader names them the same way.
const (
	KindProfile state.Kind = "profile"
	KindAgent   state.Kind = "agent"
	KindSecret  state.Kind = "secret" // the record only; the value stays in the vault
)

// NotFoundError names a missing record and the command that lists what
// exists.
type NotFoundError struct {
	What, Name, ListCmd string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %q not found (see `kandev-exec %s`)", e.What, e.Name, e.ListCmd)
}

func notFound(kind state.Kind, name string) *NotFoundError {
	return &NotFoundError{What: string(kind), Name: name, ListCmd: string(kind) + " ls"}
}

// NameError is a name no record can have (a usage error).
type NameError struct {
	Kind state.Kind
	Name string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("invalid %s name %q: want [A-Za-z0-9][A-Za-z0-9._-]*, at most 128 bytes", e.Kind, e.Name)
}

// CheckName refuses a name no record of kind can have.
func CheckName(kind state.Kind, name string) error {
	if profiles.ValidName(name) {
		return nil
	}
	return &NameError{Kind: kind, Name: name}
}

// AmbiguousError: an ID prefix, or a task name, matches several records
// (a usage error); Matches are their IDs.
type AmbiguousError struct {
	What, Prefix string
	Matches      []string
	ByName       bool // Prefix is a name several records have
}

func (e *AmbiguousError) Error() string {
	if e.ByName {
		return fmt.Sprintf("%s name %q is ambiguous: %s", e.What, e.Prefix, strings.Join(e.Matches, ", "))
	}
	return fmt.Sprintf("%s ID prefix %q is ambiguous: %s", e.What, e.Prefix, strings.Join(e.Matches, ", "))
}

// Hint says how to name one of them.
func (e *AmbiguousError) Hint() string {
	if e.ByName {
		return "name the " + e.What + " by its ID, one of those above"
	}
	return "give more characters of the ID"
}

// Get reads one record of kind into a T.
func Get[T any](ctx context.Context, st state.Store, kind state.Kind, name string) (*T, state.Record, error) {
	if err := CheckName(kind, name); err != nil {
		return nil, state.Record{}, err
	}
	rec, err := st.Get(ctx, kind, name)
	if errors.Is(err, state.ErrNotFound) {
		return nil, rec, notFound(kind, name)
	}
	if err != nil {
		return nil, rec, WithRemedy(err)
	}
	v, err := Decode[T](st, rec)
	return v, rec, err
}

// Decode reads a record's data into a T. Data that does not decode into
// one, or that names another record than the one stored (its "id", else
// its "name"), is a *state.CorruptRecordError naming where it is kept:
// shown as a blank or foreign row it would go unnoticed.
func Decode[T any](st state.Store, rec state.Record) (*T, error) {
	corrupt := func(reason string) error {
		return WithRemedy(&state.CorruptRecordError{Kind: rec.Kind, Name: rec.Name, Where: st.Locate(rec.Kind, rec.Name), Reason: reason})
	}
	var key struct {
		ID   *string `json:"id"`
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(rec.Data, &key); err != nil {
		return nil, corrupt("its data does not decode: " + err.Error())
	}
	v := new(T)
	if err := json.Unmarshal(rec.Data, v); err != nil {
		return nil, corrupt("its data does not decode: " + err.Error())
	}
	named := key.ID
	if named == nil {
		named = key.Name
	}
	switch {
	case named == nil:
		return nil, corrupt("its data names no " + string(rec.Kind))
	case *named != rec.Name:
		return nil, corrupt(fmt.Sprintf("its data names %s %q", rec.Kind, *named))
	}
	return v, nil
}

// WithRemedy adds to an unreadable record's error the command that
// removes it, for the kinds that have one.
func WithRemedy(err error) error {
	var ce *state.CorruptRecordError
	if errors.As(err, &ce) && ce.Remedy == "" {
		switch ce.Kind {
		case KindHost, KindProfile, KindAgent:
			ce.Remedy = fmt.Sprintf("kandev-exec %s rm --force %s", ce.Kind, ce.Name)
		case KindSecret:
			ce.Remedy = "kandev-exec secret rm " + ce.Name
		}
	}
	return err
}

// List reads every record of kind, sorted by name.
func List[T any](ctx context.Context, st state.Store, kind state.Kind) ([]*T, []state.Record, error) {
	recs, err := st.List(ctx, kind)
	if err != nil {
		return nil, nil, WithRemedy(err)
	}
	out := make([]*T, 0, len(recs))
	for _, rec := range recs {
		v, err := Decode[T](st, rec)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, v)
	}
	return out, recs, nil
}

// Names lists the names of every record of kind.
func Names(ctx context.Context, st state.Store, kind state.Kind) ([]string, error) {
	recs, err := st.List(ctx, kind)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(recs))
	for _, r := range recs {
		names = append(names, r.Name)
	}
	return names, nil
}

// ResolveID finds the one record of kind whose name is prefix or starts
// with it.
func ResolveID(ctx context.Context, st state.Store, kind state.Kind, prefix string) (string, error) {
	if err := CheckName(kind, prefix); err != nil {
		return "", err
	}
	if _, err := st.Get(ctx, kind, prefix); err == nil {
		return prefix, nil
	} else if !errors.Is(err, state.ErrNotFound) {
		return "", err
	}
	names, err := Names(ctx, st, kind)
	if err != nil {
		return "", err
	}
	var hits []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			hits = append(hits, n)
		}
	}
	switch len(hits) {
	case 0:
		return "", notFound(kind, prefix)
	case 1:
		return hits[0], nil
	}
	return "", &AmbiguousError{What: string(kind), Prefix: prefix, Matches: hits}
}
