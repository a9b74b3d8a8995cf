package vault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// ValueError is a secret value that cannot be stored (a usage error).
type ValueError struct{ Name, Problem string }

func (e *ValueError) Error() string { return fmt.Sprintf("secret %q: %s", e.Name, e.Problem) }

// Secret is what `secret ls` shows: never the value.
type Secret struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// secretRecord is what the store keeps: the metadata and the version id
// of the value in force ("" for a secret set before versions).
type secretRecord struct {
	Secret
	Version string `json:"version,omitempty"`
}

// secretRecord reads a secret's record; nil when there is none.
func (vt *Vault) secretRecord(ctx context.Context, name string) (*secretRecord, error) {
	r, _, err := records.Get[secretRecord](ctx, vt.st, records.KindSecret, name)
	var nf *records.NotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	return r, err
}

// SetSecret stores value under name, replacing any previous value, and
// returns the metadata and whether the secret is new. The value is
// written to a fresh file, then the record switched to it in one
// transaction: after an error the value in force is the old one, and two
// concurrent sets both land, journaled in order, the later one winning.
func (vt *Vault) SetSecret(ctx context.Context, name string, value []byte) (Secret, bool, error) {
	if err := records.CheckName(records.KindSecret, name); err != nil {
		return Secret{}, false, err
	}
	switch {
	case len(value) == 0:
		return Secret{}, false, &ValueError{Name: name, Problem: "the value is empty"}
	case len(value) > MaxSecretSize:
		return Secret{}, false, &ValueError{Name: name, Problem: fmt.Sprintf("the value is larger than %d bytes", MaxSecretSize)}
	case bytes.IndexByte(value, 0) >= 0:
		// No process environment can carry a NUL byte.
		return Secret{}, false, &ValueError{Name: name, Problem: "the value contains a NUL byte"}
	}
	dir, err := vt.secretsDir(true)
	if err != nil {
		return Secret{}, false, err
	}
	v, err := writeValue(dir, name, value)
	if err != nil {
		return Secret{}, false, fmt.Errorf("secret %q: %w", name, err)
	}
	var out secretRecord
	var created bool
	now := time.Now().UTC().Truncate(time.Second)
	// The version id (random, nothing of the value) shows in the journal
	// which of several concurrent sets is in force.
	ev := state.Event{Type: "secret.set"}
	ev.Detail, _ = json.Marshal(map[string]string{"version": v.vid})
	err = vt.st.Txn(ctx, func(tx state.Tx) error {
		rec, err := tx.Get(records.KindSecret, name)
		if errors.Is(err, state.ErrNotFound) {
			out, created = secretRecord{Secret: Secret{Name: name, CreatedAt: now, UpdatedAt: now}, Version: v.vid}, true
			data, _ := json.Marshal(out)
			_, err = tx.Create(records.KindSecret, name, data, ev)
			return err
		}
		if err != nil {
			return records.WithRemedy(err)
		}
		old, err := records.Decode[secretRecord](vt.st, rec)
		if err != nil {
			return err
		}
		out, created = secretRecord{Secret: Secret{Name: name, CreatedAt: old.CreatedAt, UpdatedAt: now}, Version: v.vid}, false
		data, _ := json.Marshal(out)
		_, err = tx.Update(records.KindSecret, name, rec.Revision, data, ev)
		return err
	})
	if err != nil {
		v.abandon()
		return Secret{}, false, err
	}
	v.done()
	// Best effort: the new value is in force whatever happens here, and a
	// file left behind is removed next time (doctor reports it meanwhile).
	vt.removeStrays(ctx, name)
	return out.Secret, created, nil
}

// ListSecrets returns the metadata of every secret ([] when none).
func (vt *Vault) ListSecrets(ctx context.Context) ([]Secret, error) {
	ss, _, err := records.List[secretRecord](ctx, vt.st, records.KindSecret)
	if err != nil {
		return nil, err
	}
	out := make([]Secret, len(ss))
	for i, s := range ss {
		out[i] = s.Secret
	}
	return out, nil
}

// SecretNames lists secret names from local state (shell completion).
func (vt *Vault) SecretNames(ctx context.Context) ([]string, error) {
	return records.Names(ctx, vt.st, records.KindSecret)
}

// RemoveSecret deletes a secret's record, then its value files (the
// record first: a secret listed is a secret that can be revealed). A
// name with no record but stray files has them removed. It returns the
// profiles and agent presets that still reference the secret: they will
// fail at launch until it is set again.
func (vt *Vault) RemoveSecret(ctx context.Context, name string) ([]string, error) {
	if err := records.CheckName(records.KindSecret, name); err != nil {
		return nil, err
	}
	users, err := vt.secretUsers(ctx, name)
	if err != nil {
		return nil, err
	}
	found := true
	err = vt.st.Txn(ctx, func(tx state.Tx) error {
		rec, err := tx.Get(records.KindSecret, name)
		if errors.Is(err, state.ErrNotFound) {
			found = false
			return nil
		}
		if err != nil {
			return err
		}
		return tx.Delete(records.KindSecret, name, rec.Revision, state.Event{Type: "secret.removed"})
	})
	var corrupt *state.CorruptRecordError
	if errors.As(err, &corrupt) {
		err = vt.st.Discard(ctx, records.KindSecret, name, state.Event{Type: "secret.discarded"})
	}
	if err != nil {
		return nil, err
	}
	removed, err := vt.removeStrays(ctx, name)
	switch {
	case err != nil && found:
		return nil, fmt.Errorf("secret %q is removed, but not all of its value files: %w (doctor lists what is left)", name, err)
	case err != nil:
		return nil, err
	case !found && len(removed) == 0:
		return nil, &records.NotFoundError{What: "secret", Name: name, ListCmd: "secret ls"}
	}
	return users, nil
}

// secretUsers names the profiles and agent presets referencing a secret.
func (vt *Vault) secretUsers(ctx context.Context, name string) ([]string, error) {
	var users []string
	uses := func(es []profiles.EnvEntry) bool {
		for _, x := range es {
			if x.Ref == (profiles.Ref{Kind: profiles.RefSecret, Name: name}) {
				return true
			}
		}
		return false
	}
	ps, _, err := records.List[profiles.Profile](ctx, vt.st, records.KindProfile)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		found := uses(p.Env)
		for _, r := range p.Repositories {
			found = found || uses(r.Secrets)
		}
		if found {
			users = append(users, "profile "+p.Name)
		}
	}
	as, _, err := records.List[profiles.AgentPreset](ctx, vt.st, records.KindAgent)
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		if uses(a.Env) {
			users = append(users, "agent "+a.Name)
		}
	}
	return users, nil
}
