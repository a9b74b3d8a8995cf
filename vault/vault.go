// Package vault keeps what must never leave the operator's machine except
// on a helper's stdin: secret values and session tokens (docs/security.md,
// "Secrets"). Values live in files beside the state store (0600, in 0700
// directories); the store holds only their records, which name a value's
// version, never the value.
package vault

import "github.com/kdlbs/kandev-exec/state"

// Vault is the secrets and tokens of one state directory.
type Vault struct {
	dir string // the local state directory
	st  state.Store
}

// New returns the vault of the state directory dir, whose records live in
// st.
func New(dir string, st state.Store) *Vault { return &Vault{dir: dir, st: st} }
