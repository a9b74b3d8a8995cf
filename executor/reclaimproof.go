package executor

import (
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
)

// proofRecord is the record a removal leaves of its proof, from the
// host's result; nil when no checkout was proven (a directory already
// gone, or an interrupted removal finished as it was left).
func proofRecord(res reclaim.Result) *records.ReclaimProof {
	if len(res.Proof) == 0 {
		return nil
	}
	p := &records.ReclaimProof{Path: res.Path, At: res.ProvenAt, Checkouts: []records.CheckoutProof{}}
	if res.Identity != nil {
		p.Dev, p.Ino = res.Identity.Dev, res.Identity.Ino
	}
	for _, c := range res.Proof {
		cp := records.CheckoutProof{Path: c.Path, Head: c.Head, Commits: []records.CommitProof{}}
		for _, x := range c.Proofs {
			cp.Commits = append(cp.Commits, records.CommitProof{Ref: x.Ref, Commit: x.Commit, Method: string(x.Method), By: x.By})
		}
		p.Checkouts = append(p.Checkouts, cp)
	}
	return p
}
