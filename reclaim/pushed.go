package reclaim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// What of the repository no upstream has. Everything the repository
// holds on to is local work until the upstream's current refs prove
// otherwise: HEAD, every ref under refs/ (remote-tracking refs too,
// which go stale: a branch the remote deleted is kept only here), and
// every reflog entry. A commit counts as pushed when it is a tip of an
// upstream or an ancestor (here) of one; a tag, or any other object a
// ref names, only when the upstream has that same object. Grafts,
// replace refs and the commit-graph cannot add ancestry (gitrun.go); a
// shallow boundary only removes it, so it can make a commit look
// unpushed, never pushed.

// allReflogs names the unpushed commits rev-list --reflog found when no
// ref or reflog entry read here was one.
const allReflogs = "the reflogs"

// held is what a repository holds on to.
type held struct {
	head string            // HEAD's commit, "" before the first
	refs map[string]string // every ref under refs/
	logs []localRef        // reflog entries, each object once
	// pseudo: what ORIG_HEAD, FETCH_HEAD and the like name (pseudoref.go).
	pseudo []localRef
	// logsUnread: the refs are in a reftable, whose reflogs git lists
	// (rev-list --reflog) rather than the proof.
	logsUnread bool
}

// heldObjects reads the refs (unless given: read for HEAD) and reflogs
// from files, or asks git for the refs when the repository keeps them in
// a reftable.
func (h *host) heldObjects(ctx context.Context, r repo, head string, refs map[string]string) (held, error) {
	hd := held{head: head}
	rt, err := r.gitDir.usesReftable()
	if err != nil {
		return held{}, err
	}
	if hd.pseudo, err = r.gitDir.pseudoRefs(); err != nil {
		return held{}, err
	}
	if !rt {
		if hd.refs = refs; refs == nil {
			if hd.refs, err = r.gitDir.refs(); err != nil {
				return held{}, err
			}
		}
		hd.logs, err = r.gitDir.reflogs()
		return hd, err
	}
	out, err := r.git(ctx, h, "", "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return held{}, err
	}
	hd.refs, hd.logsUnread = map[string]string{}, true
	return hd, parsePackedRefs(out, hd.refs)
}

// localRefs sorts what hd holds into tags (which must be upstream tips
// themselves) and everything else: HEAD, the other refs by name, then
// the pseudo-refs and reflog entries whose object no ref already names.
func (hd held) localRefs() (tags, others []localRef) {
	if hd.head != "" {
		others = append(others, localRef{"HEAD", hd.head})
	}
	names := make([]string, 0, len(hd.refs))
	for name := range hd.refs {
		names = append(names, name)
	}
	sort.Strings(names)
	named := map[string]bool{hd.head: true}
	for _, name := range names {
		oid := hd.refs[name]
		named[oid] = true
		switch {
		case name == "refs/stash": // the stash is a reason of its own
		case strings.HasPrefix(name, "refs/tags/"):
			tags = append(tags, localRef{name, oid})
		default:
			others = append(others, localRef{name, oid})
		}
	}
	for _, l := range append(append([]localRef{}, hd.pseudo...), hd.logs...) {
		if !named[l.oid] {
			named[l.oid] = true
			others = append(others, l)
		}
	}
	return tags, others
}

// checkPushed records in c what hd holds that the upstreams' current
// refs, fetched under root, do not have, and what proved the rest. The
// fetched refs decide, never the local remote-tracking refs: a
// force-push on the remote would otherwise pass for pushed.
func (h *host) checkPushed(ctx context.Context, root string, r repo, hd held, up upstreamSet, c *Checkout) error {
	tags, others := hd.localRefs()
	if len(up.urls) == 0 {
		c.NoRemote = true
		for _, l := range others {
			c.UnpushedRefs = appendOnce(c.UnpushedRefs, l.name)
		}
		for _, l := range tags {
			c.UnpushedTags = append(c.UnpushedTags, l.name)
		}
		return nil
	}
	var ups []*fetched
	tips := map[string]bool{}
	var commits []string
	for _, u := range up.urls {
		f, err := h.remotes.tips(ctx, h, root, u)
		if err != nil {
			c.FetchError = err.Error()
			return nil
		}
		ups = append(ups, f)
		for oid := range f.oids {
			tips[oid] = true
		}
		commits = append(commits, f.commits...)
	}
	for _, l := range tags {
		if !tips[l.oid] {
			c.UnpushedTags = append(c.UnpushedTags, l.name)
		}
	}
	var want []localRef
	for _, l := range others {
		if tips[l.oid] {
			c.Proofs = append(c.Proofs, Proof{Ref: l.name, Commit: l.oid, Method: ByAncestor, By: refNaming(ups, l.oid)})
		} else {
			want = append(want, l)
		}
	}
	if len(want) == 0 && !hd.logsUnread {
		return nil
	}
	r = r.withObjects(ups)
	refs, err := h.sortByType(ctx, r, want, c)
	if err != nil {
		return err
	}
	unreached, err := h.unreachable(ctx, r, refs, tips, hd.logsUnread)
	if err != nil {
		return err
	}
	left := unreached
	if len(left) > 0 {
		if left, err = h.equivalent(ctx, r, refs, commits, left, c); err != nil {
			return err
		}
	}
	if len(left) == 0 {
		// Nothing is left over, so the directory may go: the commits
		// reachability rests on are hashed before anything is read of
		// them (verify.go).
		if err := h.verifyAncestry(ctx, r, refs, tips); err != nil {
			return err
		}
	}
	if err := h.proveAncestors(ctx, ups, refs, unreached, c); err != nil || len(left) == 0 {
		return err
	}
	c.Unpushed, c.FirstUnpushed = len(left), left[0]
	for _, l := range refs {
		c.UnpushedRefs = appendOnce(c.UnpushedRefs, l.name)
	}
	if len(refs) == 0 {
		c.UnpushedRefs = []string{allReflogs}
	}
	return nil
}

// refNaming is the first remote ref of ups naming oid.
func refNaming(ups []*fetched, oid string) string {
	for _, f := range ups {
		if ref := f.oids[oid]; ref != "" {
			return ref
		}
	}
	return ""
}

// proveAncestors records, for each of refs that no walk left unreached,
// the remote ref it is reachable from.
func (h *host) proveAncestors(ctx context.Context, ups []*fetched, refs []localRef, unreached []string, c *Checkout) error {
	for _, l := range refs {
		if slices.Contains(unreached, l.oid) {
			continue
		}
		for _, f := range ups {
			by, err := f.containing(ctx, h, l.oid)
			if err != nil {
				return err
			}
			if by != "" {
				c.Proofs = append(c.Proofs, Proof{Ref: l.name, Commit: l.oid, Method: ByAncestor, By: by})
				break
			}
		}
	}
	return nil
}

// sortByType keeps the commits of want for rev-list and records the
// refs naming any other object (a tag outside refs/tags, a tree, a blob)
// in c: not an upstream tip, so not on it. An object that is missing
// holds nothing to lose.
func (h *host) sortByType(ctx context.Context, r repo, want []localRef, c *Checkout) ([]localRef, error) {
	if len(want) == 0 {
		return nil, nil
	}
	var in strings.Builder
	for _, l := range want {
		fmt.Fprintln(&in, l.oid)
	}
	out, err := r.git(ctx, h, in.String(), "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return nil, err
	}
	types := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		oid, typ, ok := strings.Cut(sc.Text(), " ")
		if !ok || !oidRE.MatchString(oid) {
			return nil, fmt.Errorf("git cat-file: unexpected line %q", sc.Text())
		}
		types[oid] = typ
	}
	var commits []localRef
	for _, l := range want {
		switch types[l.oid] {
		case "commit":
			commits = append(commits, l)
		case "missing":
		case "tag", "tree", "blob":
			c.UnpushedObjects = appendOnce(c.UnpushedObjects, l.name)
		default:
			return nil, fmt.Errorf("git cat-file: no type for %s", l.oid)
		}
	}
	return commits, sc.Err()
}

// unreachable lists, oldest first, the commits reachable from refs
// (and, with reflogs, from every reflog entry) that no tip reaches.
func (h *host) unreachable(ctx context.Context, r repo, refs []localRef, tips map[string]bool, reflogs bool) ([]string, error) {
	if len(refs) == 0 && !reflogs {
		return nil, nil
	}
	var in strings.Builder
	for _, l := range refs {
		fmt.Fprintln(&in, l.oid)
	}
	for oid := range tips {
		fmt.Fprintf(&in, "^%s\n", oid)
	}
	args := []string{"rev-list", "--topo-order", "--reverse", "--ignore-missing", "--stdin"}
	if reflogs {
		args = append(args, "--reflog")
	}
	// --ignore-missing: a tip naming what is neither here nor fetched
	// (a tree or blob ref) proves nothing, and must not fail the walk.
	out, err := r.git(ctx, h, in.String(), args...)
	if err != nil {
		return nil, err
	}
	left := strings.Fields(string(out))
	for _, oid := range left {
		if !oidRE.MatchString(oid) {
			return nil, fmt.Errorf("git rev-list: unexpected line %q", oid)
		}
	}
	return left, nil
}

func appendOnce(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
