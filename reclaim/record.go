package reclaim

// CheckoutProof is what proved one checkout of a directory safe to
// remove: the HEAD the proof saw, and for each local ref or commit, the
// remote ref or upstream commit that has it, and how. A removal leaves
// these in the caller's records (docs/contract.md, "Proof records").
type CheckoutProof struct {
	Path   string  `json:"path"`
	Head   string  `json:"head,omitempty"`
	Proofs []Proof `json:"proofs,omitempty"`
}

// proofOf is the record of ev's checkouts.
func proofOf(ev Evidence) []CheckoutProof {
	var out []CheckoutProof
	for _, c := range ev.Checkouts {
		out = append(out, CheckoutProof{Path: c.Path, Head: c.Head, Proofs: c.Proofs})
	}
	return out
}
