package reclaim

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The git side of the proof: per checkout, the gitdir and its index
// read directly (gitdir.go, indexfile.go, internal/gitsafe), its status
// read from its files where they show it clean (statusfile.go), else one
// `git status` and a `git ls-files` only where the index is git's to
// read (index.go), each upstream fetched once per call (fetch.go), and, only
// when a local ref or reflog entry is not exactly a remote tip, a `git
// cat-file` and a `git rev-list` (pushed.go), then the patch-id and
// squash comparisons for what that leaves (equivalent.go). Every git run
// is neutralised as gitrun.go says.

// status is what `git status --porcelain=v2` says about a checkout.
type status struct {
	head                                  string // HEAD's commit, "" before the first commit
	changed, unmerged, untracked, ignored []string
}

// statusArgs: every untracked file on its own, ignored entries as they
// match a pattern (an ignored directory once, not each file in it), and
// a submodule only when its commit differs from the one recorded (its
// own files are probed as a checkout of their own).
var statusArgs = []string{"status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
	"--ignored=matching", "--ignore-submodules=dirty"}

// parseStatus reads porcelain v2 with -z. An unknown record is an error:
// a format we do not understand proves nothing.
func parseStatus(out []byte) (status, error) {
	var s status
	recs := strings.Split(string(out), "\x00")
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		if r == "" {
			continue
		}
		fields := func(n int) (string, error) {
			f := strings.SplitN(r, " ", n)
			if len(f) != n {
				return "", fmt.Errorf("git status: short record %q", r)
			}
			return f[n-1], nil
		}
		var err error
		var p string
		switch r[0] {
		case '#':
			if v, ok := strings.CutPrefix(r, "# branch.oid "); ok && v != "(initial)" {
				if !oidRE.MatchString(v) {
					return status{}, fmt.Errorf("git status: bad branch.oid %q", v)
				}
				s.head = v
			}
			continue
		case '1':
			p, err = fields(9)
			s.changed = append(s.changed, p)
		case '2':
			p, err = fields(10)
			s.changed = append(s.changed, p)
			i++ // the original path follows as a record of its own
		case 'u':
			p, err = fields(11)
			s.unmerged = append(s.unmerged, p)
		case '?':
			p, err = fields(2)
			s.untracked = append(s.untracked, p)
		case '!':
			p, err = fields(2)
			s.ignored = append(s.ignored, p)
		default:
			err = fmt.Errorf("git status: unknown record %q", r)
		}
		if err != nil {
			return status{}, err
		}
	}
	return s, nil
}

// probed is one checkout's evidence with what the cross-checks need.
type probed struct {
	Checkout
	gitDir  gitDir
	modules []string // submodule repositories under its gitdir
}

// probeCheckouts probes every checkout the walk of t's directory, at
// dir (its name, or its trash name once its removal began), found
// (tr.checkouts[0] is its top, unless the operator named a directory
// that is none), then what no single probe can tell: a
// submodule repository no checkout uses, a repository elsewhere that
// borrows objects from the directory.
func (h *host) probeCheckouts(ctx context.Context, t Target, dir string, tr tree) []Checkout {
	files := filesByCheckout(tr)
	ps := make([]probed, len(tr.checkouts))
	for i, rel := range tr.checkouts {
		ps[i] = h.probeCheckout(ctx, t, dir, rel, files[rel], len(tr.checkouts) == 1)
	}
	crossCheckModules(ps)
	out := make([]Checkout, len(ps))
	for i, p := range ps {
		out[i] = p.Checkout
	}
	out[0].BorrowedBy = h.borrowersOf(t.Root, dir)
	return out
}

// filesByCheckout gives each entry of the walk below the top, outside
// .git directories and not a .git file itself (what git status must
// account for), to the innermost checkout holding it, relative to that
// checkout.
func filesByCheckout(tr tree) map[string][]entry {
	isCheckout := map[string]bool{}
	for _, c := range tr.checkouts {
		isCheckout[c] = true
	}
	out := map[string][]entry{}
	for _, e := range tr.entries {
		f := e.rel
		if f == "." || slices.Contains(strings.Split(f, "/"), ".git") {
			continue
		}
		c := path.Dir(f)
		for c != "." && !isCheckout[c] {
			c = path.Dir(c)
		}
		rel := f
		if c != "." {
			rel = strings.TrimPrefix(f, c+"/")
		}
		e.rel = rel
		out[c] = append(out[c], e)
	}
	return out
}

// probeCheckout gathers the evidence of the checkout at rel in t's
// directory, at dir, given the files the walk found in it. A failure
// lands in Error: unknown keeps the directory. alone: the directory
// holds no other checkout, whose files would be the parent's untracked
// ones to git.
func (h *host) probeCheckout(ctx context.Context, t Target, dir, rel string, files []entry, alone bool) probed {
	p := probed{Checkout: Checkout{Path: rel}}
	if err := h.probeInto(ctx, t, filepath.Join(dir, rel), rel, files, alone, &p); err != nil {
		p.Checkout = Checkout{Path: rel, Error: err.Error()}
	}
	return p
}

func (h *host) probeInto(ctx context.Context, t Target, dir, rel string, files []entry, alone bool, p *probed) error {
	g, err := findGitDir(dir)
	if err != nil {
		return err
	}
	p.gitDir = g
	cfg, err := g.config()
	if err != nil {
		return err
	}
	if p.UnsafeConfig = cfg.Include(); p.UnsafeConfig != "" {
		return nil // no git runs under a configuration the proof cannot neutralise
	}
	if err := h.checkLooseObjects(ctx, g); err != nil {
		return err
	}
	if p.Operation, err = g.operation(); err != nil {
		return err
	}
	if p.Worktrees, err = g.worktrees(); err != nil {
		return err
	}
	if p.modules, err = g.modules(); err != nil {
		return err
	}
	r := newRepo(dir, g, cfg)
	var ff fromFiles
	clean := false
	if alone {
		ff, clean = cleanFromFiles(dir, g, cfg, files, rel == ".")
	}
	st, idx := ff.st, ff.idx
	if !clean {
		if st, err = h.gitStatus(ctx, r); err != nil {
			return err
		}
		if idx, err = h.indexEntries(ctx, r, cfg, st.head); err != nil {
			return err
		}
	}
	p.Head, p.Changed, p.Unmerged, p.Untracked, p.Ignored = st.head, st.changed, st.unmerged, st.untracked, st.ignored
	var names []string
	for _, f := range files {
		if !f.isDir() {
			names = append(names, f.rel)
		}
	}
	if p.Hidden, err = hiddenFiles(dir, names, idx, st, rel == "."); err != nil {
		return err
	}
	held, err := h.heldObjects(ctx, r, st.head, ff.refs)
	if err != nil {
		return err
	}
	_, p.Stash = held.refs["refs/stash"]
	up := upstreams(t, rel, dir, cfg)
	p.IgnoredRemotes = up.ignored
	return h.checkPushed(ctx, t.Root, r, held, up, &p.Checkout)
}

func (h *host) gitStatus(ctx context.Context, r repo) (status, error) {
	out, err := r.git(ctx, h, "", statusArgs...)
	if err != nil {
		return status{}, err
	}
	return parseStatus(out)
}

// crossCheckModules flags submodule repositories that no probed checkout
// uses: their commits would go with the directory unseen.
func crossCheckModules(ps []probed) {
	used := map[string]bool{}
	for _, p := range ps {
		if p.gitDir.dir != "" {
			used[p.gitDir.dir] = true
		}
	}
	for i := range ps {
		for _, m := range ps[i].modules {
			if !used[m] {
				ps[i].UnprobedModules = append(ps[i].UnprobedModules, m)
			}
		}
	}
}
