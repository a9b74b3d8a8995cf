package records

import "time"

// ReclaimProof is what proved a removed task directory safe to remove,
// kept on the task and in the journal: a removal without one is a bug
// (docs/security.md, "A record of every removal").
type ReclaimProof struct {
	Path      string          `json:"path"`
	Dev       uint64          `json:"dev"`
	Ino       uint64          `json:"ino"`
	At        time.Time       `json:"at"`
	Checkouts []CheckoutProof `json:"checkouts"`
}

// CheckoutProof is one checkout's part: the HEAD the proof saw, and what
// proved each local ref or commit upstream.
type CheckoutProof struct {
	Path    string        `json:"path"`
	Head    string        `json:"head"`
	Commits []CommitProof `json:"commits"`
}

// CommitProof: Method is ancestor (By is the remote ref it is reachable
// from), patch-id or squash (By is the upstream commit making the same
// change). Ref is the local ref, for ancestor.
type CommitProof struct {
	Ref    string `json:"ref,omitempty"`
	Commit string `json:"commit"`
	Method string `json:"method"`
	By     string `json:"by"`
}

// Methods lists the methods p used, each once, in the order ancestor,
// patch-id, squash.
func (p *ReclaimProof) Methods() []string {
	used := map[string]bool{}
	for _, c := range p.Checkouts {
		for _, cp := range c.Commits {
			used[cp.Method] = true
		}
	}
	var out []string
	for _, m := range []string{"ancestor", "patch-id", "squash"} {
		if used[m] {
			out = append(out, m)
		}
	}
	return out
}
