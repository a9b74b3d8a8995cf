package reclaim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
)

// Work merged upstream under other commits. A squash or rebase merge
// leaves none of a task's commits on the remote, yet its change is
// there. A commit no upstream tip reaches still counts as upstream when
// an upstream commit makes the same change: the same patch-id (a rebase
// or a cherry-pick), or, for the commits of a local ref since its merge
// base with the upstream taken together, one upstream commit whose
// change is their combined diff (a squash). Diffs are plumbing
// (diff-tree) with every option that shapes them given, so no textconv
// or external diff driver of the checkout's runs, binary changes are
// compared in full, and whitespace counts (patch-id --verbatim).

// Method is how a commit was proven upstream.
type Method string

const (
	ByAncestor Method = "ancestor" // reachable from a remote ref
	ByPatchID  Method = "patch-id" // an upstream commit makes the same change
	BySquash   Method = "squash"   // an upstream commit makes the change of the commits since the merge base taken together
)

// Proof says what proved a commit (or a local ref, for ancestor)
// upstream: By is the remote ref, or the upstream commit.
type Proof struct {
	Ref    string `json:"ref,omitempty"`
	Commit string `json:"commit"`
	Method Method `json:"method"`
	By     string `json:"by"`
}

var diffArgs = []string{"-r", "-p", "--binary", "--full-index", "--no-textconv", "--no-ext-diff", "--no-renames",
	"-U3", "--diff-algorithm=myers", "--no-color"}

// squashTries bounds how many commits back from a ref's tip the squash
// method looks for the newest commit whose combined change is upstream.
const squashTries = 16

// equivalent proves what of left (commits no tip reaches, oldest first)
// an upstream commit makes the same change as, adding a Proof for each
// to c, and returns the rest in the same order. refs are the local
// commits the walk started from; tips the upstreams' commits.
func (h *host) equivalent(ctx context.Context, r repo, refs []localRef, tips, left []string, c *Checkout) ([]string, error) {
	var in strings.Builder
	for _, t := range tips {
		fmt.Fprintln(&in, t)
	}
	for _, l := range refs {
		fmt.Fprintf(&in, "^%s\n", l.oid)
	}
	out, err := r.git(ctx, h, in.String(), "rev-list", "--no-merges", "--ignore-missing", "--stdin")
	if err != nil {
		return nil, err
	}
	remote := strings.Fields(string(out))
	if len(remote) == 0 {
		return left, nil
	}
	ids, err := h.commitPatchIDs(ctx, r, append(append([]string{}, remote...), left...))
	if err != nil {
		return nil, err
	}
	upstream := map[string]string{} // patch-id → the upstream commit making that change
	for _, oid := range remote {
		if id, ok := ids[oid]; ok && upstream[id] == "" {
			upstream[id] = oid
		}
	}
	proven := map[string]bool{}
	for _, oid := range left {
		if by := upstream[ids[oid]]; by != "" {
			proven[oid] = true
			c.Proofs = append(c.Proofs, Proof{Commit: oid, Method: ByPatchID, By: by})
		}
	}
	for _, l := range refs {
		if !slices.Contains(left, l.oid) || proven[l.oid] {
			continue
		}
		if err := h.squashed(ctx, r, l.oid, tips, left, upstream, proven, c); err != nil {
			return nil, err
		}
	}
	var rest []string
	for _, oid := range left {
		if !proven[oid] {
			rest = append(rest, oid)
		}
	}
	return rest, nil
}

// squashed looks, from tip back along its first parents, for the newest
// commit whose change since the merge base with the upstream is one
// upstream commit's, and proves the commits of left it covers.
func (h *host) squashed(ctx context.Context, r repo, tip string, tips, left []string, upstream map[string]string, proven map[string]bool, c *Checkout) error {
	base, err := h.mergeBase(ctx, r, tip, tips)
	if err != nil || base == "" {
		return err
	}
	out, err := r.git(ctx, h, "", "rev-list", "--first-parent", fmt.Sprintf("--max-count=%d", squashTries), tip, "^"+base)
	if err != nil {
		return err
	}
	chain := strings.Fields(string(out))
	var patches bytes.Buffer
	for _, x := range chain {
		d, err := r.git(ctx, h, "", append(append([]string{"diff-tree"}, diffArgs...), base, x)...)
		if err != nil {
			return err
		}
		fmt.Fprintf(&patches, "commit %s\n", x)
		patches.Write(d)
	}
	ids, err := h.patchIDs(ctx, r, patches.Bytes())
	if err != nil {
		return err
	}
	for _, x := range chain {
		by := upstream[ids[x]]
		if by == "" {
			continue
		}
		out, err := r.git(ctx, h, "", "rev-list", x, "^"+base)
		if err != nil {
			return err
		}
		for _, oid := range strings.Fields(string(out)) {
			if slices.Contains(left, oid) && !proven[oid] {
				proven[oid] = true
				c.Proofs = append(c.Proofs, Proof{Commit: oid, Method: BySquash, By: by})
			}
		}
		return nil
	}
	return nil
}

// mergeBase is tip's best common ancestor with the upstream tips, ""
// when there is none. The candidates are the boundary of tip's commits
// that no tip reaches (tips on stdin: a remote may have more refs than
// an argument list holds); merge-base picks among them when there are
// several (a branch that merged the upstream's main into itself).
func (h *host) mergeBase(ctx context.Context, r repo, tip string, tips []string) (string, error) {
	var in strings.Builder
	fmt.Fprintln(&in, tip)
	for _, t := range tips {
		fmt.Fprintf(&in, "^%s\n", t)
	}
	out, err := r.git(ctx, h, in.String(), "rev-list", "--boundary", "--stdin")
	if err != nil {
		return "", err
	}
	var bounds []string
	for _, l := range strings.Fields(string(out)) {
		if b, ok := strings.CutPrefix(l, "-"); ok && oidRE.MatchString(b) {
			bounds = append(bounds, b)
		}
	}
	switch len(bounds) {
	case 0:
		return "", nil
	case 1:
		return bounds[0], nil
	}
	out, err = r.git(ctx, h, "", append([]string{"merge-base", tip}, bounds...)...)
	if err != nil {
		return "", nil // none git can find: nothing is proven by a squash
	}
	base := strings.TrimSpace(string(out))
	if !oidRE.MatchString(base) {
		return "", fmt.Errorf("git merge-base: unexpected output %q", out)
	}
	return base, nil
}

// commitPatchIDs is each commit's patch-id; a merge, a root commit and
// a commit that changes nothing have none.
func (h *host) commitPatchIDs(ctx context.Context, r repo, commits []string) (map[string]string, error) {
	patches, err := r.git(ctx, h, strings.Join(commits, "\n")+"\n", append([]string{"diff-tree", "--stdin"}, diffArgs...)...)
	if err != nil {
		return nil, err
	}
	return h.patchIDs(ctx, r, patches)
}

// patchIDs runs patch-id over patches, each headed by its commit, and
// maps commit to patch-id.
func (h *host) patchIDs(ctx context.Context, r repo, patches []byte) (map[string]string, error) {
	ids := map[string]string{}
	if len(patches) == 0 {
		return ids, nil
	}
	out, err := r.git(ctx, h, string(patches), "patch-id", "--verbatim")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		id, oid, ok := strings.Cut(sc.Text(), " ")
		if !ok || !oidRE.MatchString(id) || !oidRE.MatchString(oid) {
			return nil, fmt.Errorf("git patch-id: unexpected line %q", sc.Text())
		}
		ids[oid] = id
	}
	return ids, sc.Err()
}
