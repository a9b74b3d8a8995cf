package reclaim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// The git side of the proof: one `git status` per checkout, the rest read
// from the gitdir (gitdir.go), the remotes' tips asked once per URL per
// call (remotes.go), and a `git rev-list` only when a local tip is not
// exactly a remote one.

// gitArgs keep every probe read-only and fresh: no optional locks (the
// index is not refreshed on disk), and neither fsmonitor nor the
// untracked cache, which have reported stale answers.
var gitArgs = []string{"--no-optional-locks", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false"}

// gitEnvDrop: variables that would point git at another repository,
// work tree or object store than the checkout probed.
var gitEnvDrop = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
	"GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_REPLACE_REF_BASE"}

const gitErrTail = 512

// git runs one read-only git command in dir under the probe timeout and
// returns its stdout; any failure is an error (unknown).
func (h *host) git(parent context.Context, dir, stdin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(parent, h.probeTimeout)
	defer cancel()
	h.gitRuns.Add(1)
	cmd := taskdir.GroupCommand(ctx, dir, "git", append(append([]string{}, gitArgs...), args...)...)
	cmd.Env = append(gitEnv(),
		"GIT_TERMINAL_PROMPT=0",
		"GIT_NO_REPLACE_OBJECTS=1", // replace refs could hide commits from rev-list
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir),
		"LC_ALL=C")
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		what := taskdir.MaskURLs("git " + strings.Join(args, " "))
		switch {
		case parent.Err() != nil:
			return nil, fmt.Errorf("%s: the call's time ran out", what)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s timed out after %s", what, h.probeTimeout)
		}
		tail := stderr.Bytes()
		if len(tail) > gitErrTail {
			tail = tail[len(tail)-gitErrTail:]
		}
		return nil, fmt.Errorf("%s: %v: %s", what, err, taskdir.MaskURLs(strings.TrimSpace(string(tail))))
	}
	return stdout.Bytes(), nil
}

func gitEnv() []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, k := range gitEnvDrop {
			if strings.HasPrefix(kv, k+"=") {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}

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

// probeCheckout gathers the evidence of the checkout at rel in top. A
// failure lands in Error: unknown keeps the directory.
func (h *host) probeCheckout(ctx context.Context, top, rel string) probed {
	p := probed{Checkout: Checkout{Path: rel}}
	if err := h.probeInto(ctx, filepath.Join(top, rel), &p); err != nil {
		p.Checkout = Checkout{Path: rel, Error: err.Error()}
	}
	return p
}

func (h *host) probeInto(ctx context.Context, dir string, p *probed) error {
	g, err := findGitDir(dir)
	if err != nil {
		return err
	}
	p.gitDir = g
	if p.Operation, err = g.operation(); err != nil {
		return err
	}
	if p.Worktrees, err = g.worktrees(); err != nil {
		return err
	}
	if p.modules, err = g.modules(); err != nil {
		return err
	}
	out, err := h.git(ctx, dir, "", statusArgs...)
	if err != nil {
		return err
	}
	st, err := parseStatus(out)
	if err != nil {
		return err
	}
	p.Changed, p.Unmerged, p.Untracked, p.Ignored = st.changed, st.unmerged, st.untracked, st.ignored
	refs, err := h.readRefs(ctx, dir, g)
	if err != nil {
		return err
	}
	_, p.Stash = refs["refs/stash"]
	urls, err := g.remoteURLs()
	if err != nil {
		return err
	}
	return h.checkPushed(ctx, dir, st.head, refs, urls, &p.Checkout)
}

// readRefs reads the refs from files, or asks git when the repository
// keeps them in a reftable.
func (h *host) readRefs(ctx context.Context, dir string, g gitDir) (map[string]string, error) {
	if rt, err := g.usesReftable(); err != nil {
		return nil, err
	} else if !rt {
		return g.refs()
	}
	out, err := h.git(ctx, dir, "", "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	return refs, parsePackedRefs(out, refs)
}

// checkPushed finds what of HEAD, the local branches, notes and tags no
// remote has now. The remotes' current tips decide, never the local
// remote-tracking refs, which go stale: a force-push on the remote would
// otherwise pass for pushed. A commit counts as pushed when it is a tip
// of a remote or an ancestor (here) of one; a tag only when the remote
// has that same tag object.
func (h *host) checkPushed(ctx context.Context, dir, head string, refs map[string]string, urls []string, c *Checkout) error {
	type local struct{ name, oid string }
	var commits, tags []local
	if head != "" {
		commits = append(commits, local{"HEAD", head})
	}
	for name, oid := range refs {
		switch {
		case strings.HasPrefix(name, "refs/heads/"), strings.HasPrefix(name, "refs/notes/"):
			commits = append(commits, local{name, oid})
		case strings.HasPrefix(name, "refs/tags/"):
			tags = append(tags, local{name, oid})
		}
	}
	byName := func(s []local) func(i, j int) bool { return func(i, j int) bool { return s[i].name < s[j].name } }
	sort.Slice(commits, byName(commits))
	sort.Slice(tags, byName(tags))
	if len(urls) == 0 {
		c.NoRemote = true
		for _, l := range commits {
			c.UnpushedRefs = append(c.UnpushedRefs, l.name)
		}
		for _, l := range tags {
			c.UnpushedTags = append(c.UnpushedTags, l.name)
		}
		return nil
	}
	tips := map[string]bool{}
	for _, u := range urls {
		t, err := h.remotes.tips(ctx, h, dir, u)
		if err != nil {
			return err
		}
		for oid := range t {
			tips[oid] = true
		}
	}
	for _, l := range tags {
		if !tips[l.oid] {
			c.UnpushedTags = append(c.UnpushedTags, l.name)
		}
	}
	var want strings.Builder
	var names []string
	for _, l := range commits {
		if !tips[l.oid] {
			fmt.Fprintln(&want, l.oid)
			names = append(names, l.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	for oid := range tips {
		fmt.Fprintf(&want, "^%s\n", oid)
	}
	// --ignore-missing: a remote tip this repository has never fetched
	// proves nothing here, and must not fail the walk.
	out, err := h.git(ctx, dir, want.String(), "rev-list", "--count", "--ignore-missing", "--stdin")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("git rev-list --count: unexpected output %q", out)
	}
	if n > 0 {
		c.Unpushed, c.UnpushedRefs = n, names
		for name, oid := range refs {
			if strings.HasPrefix(name, "refs/remotes/") && !strings.HasSuffix(name, "/HEAD") && !tips[oid] {
				c.Stale = true
			}
		}
	}
	return nil
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
