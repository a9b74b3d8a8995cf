package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/state"
)

// KindSecret is the store kind of secret metadata: names and times, never
// the value or anything derived from it.
const KindSecret state.Kind = "secret"

// Secret is what `secret ls` shows.
type Secret struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SetSecret stores value under name, replacing any previous value. It
// returns the metadata and whether the secret is new.
func (e *Executor) SetSecret(ctx context.Context, name string, value []byte) (Secret, bool, error) {
	if err := checkName(KindSecret, name); err != nil {
		return Secret{}, false, err
	}
	switch {
	case len(value) == 0:
		return Secret{}, false, &UsageError{Msg: fmt.Sprintf("secret %q: the value is empty", name)}
	case len(value) > MaxSecretSize:
		return Secret{}, false, &UsageError{Msg: fmt.Sprintf("secret %q: the value is larger than %d bytes", name, MaxSecretSize)}
	case bytes.IndexByte(value, 0) >= 0:
		// No process environment can carry a NUL byte.
		return Secret{}, false, &UsageError{Msg: fmt.Sprintf("secret %q: the value contains a NUL byte", name)}
	}
	dir, err := e.secretsDir(true)
	if err != nil {
		return Secret{}, false, err
	}
	// The value first: metadata without a file would list a secret that
	// cannot be revealed.
	if err := writeSecretFile(dir, name, value); err != nil {
		return Secret{}, false, fmt.Errorf("secret %q: %w", name, err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	old, rec, err := getRecord[Secret](ctx, e.cfg.Store, KindSecret, name)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		s := Secret{Name: name, CreatedAt: now, UpdatedAt: now}
		data, _ := json.Marshal(s)
		_, err = e.cfg.Store.Create(ctx, KindSecret, name, data, state.Event{Type: "secret.set"})
		return s, true, err
	}
	if err != nil {
		return Secret{}, false, err
	}
	old.UpdatedAt = now
	data, _ := json.Marshal(old)
	_, err = e.cfg.Store.Update(ctx, KindSecret, name, rec.Revision, data, state.Event{Type: "secret.set"})
	return *old, false, err
}

// ListSecrets returns the metadata of every secret ([] when none).
func (e *Executor) ListSecrets(ctx context.Context) ([]Secret, error) {
	ss, _, err := listRecords[Secret](ctx, e.cfg.Store, KindSecret)
	if err != nil {
		return nil, err
	}
	out := make([]Secret, len(ss))
	for i, s := range ss {
		out[i] = *s
	}
	return out, nil
}

// SecretNames lists secret names from local state (shell completion).
func (e *Executor) SecretNames(ctx context.Context) ([]string, error) {
	return e.recordNames(ctx, KindSecret)
}

// RemoveSecret deletes a secret's value, then its metadata. It returns the
// profiles and agent presets that still reference it: they will fail at
// launch until it is set again.
func (e *Executor) RemoveSecret(ctx context.Context, name string) ([]string, error) {
	_, rec, err := getRecord[Secret](ctx, e.cfg.Store, KindSecret, name)
	var nf *NotFoundError
	if err != nil && !errors.As(err, &nf) {
		return nil, err
	}
	removed, ferr := e.removeSecretFile(name)
	if ferr != nil {
		return nil, ferr
	}
	if nf != nil {
		if !removed {
			return nil, &NotFoundError{What: "secret", Name: name, ListCmd: "secret ls"}
		}
	} else if err := e.cfg.Store.Delete(ctx, KindSecret, name, rec.Revision, state.Event{Type: "secret.removed"}); err != nil {
		return nil, err
	}
	return e.secretUsers(ctx, name)
}

// removeSecretFile deletes the value file; false when there was none.
func (e *Executor) removeSecretFile(name string) (bool, error) {
	dir, err := e.secretsDir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = os.Remove(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, syncDir(dir)
}

// secretUsers names the profiles and agent presets referencing a secret.
func (e *Executor) secretUsers(ctx context.Context, name string) ([]string, error) {
	var users []string
	uses := func(es []profiles.EnvEntry) bool {
		for _, x := range es {
			if x.Ref == (profiles.Ref{Kind: profiles.RefSecret, Name: name}) {
				return true
			}
		}
		return false
	}
	ps, _, err := listRecords[profiles.Profile](ctx, e.cfg.Store, KindProfile)
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
	as, _, err := listRecords[profiles.AgentPreset](ctx, e.cfg.Store, KindAgent)
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
