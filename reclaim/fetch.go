package reclaim

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/gitsafe"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// The proof fetches each upstream once per call, never trusting what a
// checkout already has of it (its remote-tracking refs go stale, and it
// may lack the objects of a squash or rebase done on the remote). The
// fetch goes into a scratch bare repository the call makes under the
// root, outside tasks/, in a ref namespace of its own; git runs there,
// not in any checkout, so no configuration, hook or remote the agent
// wrote applies, and the login user's own configuration and credentials
// do. The checkouts' git runs borrow its objects for the length of the
// call (GIT_ALTERNATE_OBJECT_DIRECTORIES) and write nothing; the scratch
// repository, namespace and all, is removed when the call ends (or, when
// the helper is killed first, by the next call: scratch.go).

// proofNamespace is where the remote's refs land in the scratch
// repository, under a nonce of the call's.
const proofNamespace = "refs/kandev-proof/"

// fetched is what one fetch of an upstream brought.
type fetched struct {
	gitDir, ns string            // the scratch repository, and the namespace its refs are in
	objects    string            // its object store
	refs       map[string]string // each remote ref (its name on the remote) and the object it names
	oids       map[string]string // every object a ref names, peeled tags too, and the first such ref
	commits    []string          // the commits the refs name, peeled, each once
}

// fetchUpstream fetches every ref of url into a new scratch repository
// under root. Each git process is bounded by the probe timeout.
func fetchUpstream(ctx context.Context, h *host, root, url string) (*fetched, error) {
	if strings.HasPrefix(url, "-") {
		return nil, fmt.Errorf("remote url %q looks like an option", taskdir.MaskURLs(url))
	}
	dir, err := h.scratch.make(ctx, h, root)
	if err != nil {
		return nil, fmt.Errorf("a scratch repository for the fetch: %v", err)
	}
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	ns := proofNamespace + hex.EncodeToString(nonce) + "/"
	env := append(gitsafe.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	// No template: the scratch repository has no hooks at all.
	if _, err := h.runGit(ctx, "/", env, "", nil, []string{"init", "--quiet", "--bare", "--template=", dir}); err != nil {
		return nil, err
	}
	pinned := []string{"--git-dir=" + dir}
	fetch := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--no-auto-maintenance",
		"--no-recurse-submodules", "--end-of-options", url, "+refs/*:" + ns + "*"}
	if _, err := h.runGit(ctx, "/", env, "", pinned, fetch); err != nil {
		return nil, err
	}
	out, err := h.runGit(ctx, "/", env, "", pinned, []string{"for-each-ref",
		"--format=%(objectname) %(objecttype) %(*objectname) %(*objecttype) %(refname)", ns})
	if err != nil {
		return nil, err
	}
	f, err := parseFetchedRefs(out, ns)
	if err != nil {
		return nil, err
	}
	f.gitDir, f.ns, f.objects = dir, ns, filepath.Join(dir, "objects")
	return f, nil
}

// name records ref as naming oid unless a ref sorted before it does.
func (f *fetched) name(oid, ref string) {
	if f.oids[oid] == "" {
		f.oids[oid] = ref
	}
}

// containing names a remote ref oid is reachable from, or "".
func (f *fetched) containing(ctx context.Context, h *host, oid string) (string, error) {
	if ref := f.oids[oid]; ref != "" {
		return ref, nil
	}
	env := append(gitsafe.Environ(), "LC_ALL=C")
	out, err := h.runGit(ctx, "/", env, "", []string{"--git-dir=" + f.gitDir},
		[]string{"for-each-ref", "--count=1", "--contains=" + oid, "--format=%(refname)", f.ns})
	if err != nil {
		return "", err
	}
	if ref := strings.TrimSpace(string(out)); ref != "" {
		return "refs/" + strings.TrimPrefix(ref, f.ns), nil
	}
	return "", nil
}

// parseFetchedRefs reads for-each-ref lines "<oid> <type> <peeled oid>
// <peeled type> <ref>" (the peeled pair empty but for tags).
func parseFetchedRefs(out []byte, ns string) (*fetched, error) {
	f := &fetched{refs: map[string]string{}, oids: map[string]string{}}
	seen := map[string]bool{}
	commit := func(oid string) {
		if !seen[oid] {
			seen[oid] = true
			f.commits = append(f.commits, oid)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		fl := strings.Split(sc.Text(), " ")
		if len(fl) != 5 || !oidRE.MatchString(fl[0]) || !strings.HasPrefix(fl[4], ns) ||
			fl[2] != "" && !oidRE.MatchString(fl[2]) {
			return nil, fmt.Errorf("git for-each-ref: unexpected line %q", sc.Text())
		}
		name := "refs/" + strings.TrimPrefix(fl[4], ns)
		f.refs[name] = fl[0]
		f.name(fl[0], name)
		switch {
		case fl[1] == "commit":
			commit(fl[0])
		case fl[2] != "":
			f.name(fl[2], name)
			if fl[3] == "commit" {
				commit(fl[2])
			}
		}
	}
	return f, sc.Err()
}

// withObjects is r whose git runs also read the objects of the fetches.
func (r repo) withObjects(fs []*fetched) repo {
	var dirs []string
	for _, f := range fs {
		dirs = append(dirs, f.objects)
	}
	r.env = append(append([]string{}, r.env...), "GIT_ALTERNATE_OBJECT_DIRECTORIES="+strings.Join(dirs, ":"))
	return r
}
