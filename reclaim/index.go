package reclaim

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/gitsafe"
)

// git status reports what git looks at, and git can be told not to look:
// an index entry marked skip-worktree or assume-unchanged is never
// compared, and a submodule path without a repository is never entered.
// So every file the walk found must be accounted for: a tracked path git
// compares (or, for a marked one, whose content the proof hashed and
// found identical), something status reported (which keeps the directory
// on its own), or the top checkout's .kandev/. Anything else is hidden.

// indexEntry is one path of the index as `git ls-files -s -v` lists it.
type indexEntry struct {
	mode, oid string
	tag       byte // H cached, S skip-worktree, M unmerged; lower case: assume-unchanged too
}

const gitlinkMode = "160000"

// lsFilesArgs: every entry of the index, sparse directories expanded,
// with its mode, object and flags.
var lsFilesArgs = []string{"ls-files", "-z", "--stage", "-v"}

// indexEntries is the checkout's index as `git ls-files` lists it: read
// from the file where the reader is sure to read what git would
// (indexfile.go), else from git. head is the commit status named. Where
// git fails too, the error gives the reader's reason with git's.
func (h *host) indexEntries(ctx context.Context, r repo, cfg gitsafe.Config, head string) (map[string]indexEntry, error) {
	idx, declined := readIndexFile(r.gitDir, cfg, head)
	switch {
	case declined == nil:
		return idx, nil
	case errors.Is(declined, errIndexChecksum):
		return nil, fmt.Errorf("%s does not match its checksum (cut short or edited), and git reads it without checking; see git -C %s status",
			filepath.Join(r.gitDir.dir, "index"), r.dir)
	}
	out, err := r.git(ctx, h, "", lsFilesArgs...)
	if err != nil {
		return nil, fmt.Errorf("%w (the index was left to git: %v)", err, declined)
	}
	return parseLsFiles(out)
}

// parseLsFiles reads "<tag> <mode> <oid> <stage>\t<path>" records.
func parseLsFiles(out []byte) (map[string]indexEntry, error) {
	idx := map[string]indexEntry{}
	for _, r := range strings.Split(string(out), "\x00") {
		if r == "" {
			continue
		}
		meta, p, ok := strings.Cut(r, "\t")
		f := strings.Split(meta, " ")
		if !ok || p == "" || len(f) != 4 || len(f[0]) != 1 || !strings.Contains("HSMhsm", f[0]) || !oidRE.MatchString(f[2]) {
			return nil, fmt.Errorf("git ls-files: unexpected record %.80q", r)
		}
		idx[p] = indexEntry{mode: f[1], oid: f[2], tag: f[0][0]}
	}
	return idx, nil
}

// hiddenFiles lists the files of checkout at dir (files relative to it;
// its nested checkouts' files are not among them) that no evidence
// covers, each with why. top: dir is the task directory's top, whose
// .kandev/ is ours.
func hiddenFiles(dir string, files []string, idx map[string]indexEntry, st status, top bool) ([]string, error) {
	reported := map[string]bool{}
	for _, e := range append(append([]string{}, st.untracked...), st.ignored...) {
		reported[strings.TrimSuffix(e, "/")] = true
	}
	var hidden []string
	for _, f := range files {
		if top && (f == metaDir || strings.HasPrefix(f, metaDir+"/")) {
			continue
		}
		if e, ok := idx[f]; ok && e.mode != gitlinkMode {
			why, err := flaggedDiffers(dir, f, e)
			if err != nil {
				return nil, err
			}
			if why != "" {
				hidden = append(hidden, fmt.Sprintf("%s (%s)", f, why))
			}
			continue
		}
		if underAny(f, reported) {
			continue
		}
		why := "not seen by git status"
		for d := f; d != "."; d = path.Dir(d) {
			if e, ok := idx[d]; ok && e.mode == gitlinkMode {
				why = fmt.Sprintf("in submodule path %s, which has no repository", d)
				break
			}
		}
		hidden = append(hidden, fmt.Sprintf("%s (%s)", f, why))
	}
	return hidden, nil
}

// underAny reports whether p or a directory above it is in set.
func underAny(p string, set map[string]bool) bool {
	for ; p != "."; p = path.Dir(p) {
		if set[p] {
			return true
		}
	}
	return false
}

// flaggedDiffers says how a marked entry's file differs from the index
// ("" when it is unmarked, and so compared by status, or identical).
func flaggedDiffers(dir, rel string, e indexEntry) (string, error) {
	var flag string
	switch {
	case e.tag == 'S' || e.tag == 's':
		flag = "skip-worktree"
	case e.tag >= 'a':
		flag = "assume-unchanged"
	default:
		return "", nil
	}
	mode, oid, err := blobOf(dir+"/"+rel, len(e.oid))
	if err != nil {
		return "", err
	}
	if mode != e.mode || oid != e.oid {
		return fmt.Sprintf("marked %s, and differs from the index", flag), nil
	}
	return "", nil
}

// blobOf is the mode and object id git would give the file at p as it
// is (no filter or line-ending conversion: a file git would convert
// differs, and is kept). oidLen says the repository's hash.
func blobOf(p string, oidLen int) (mode, oid string, err error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", "", err
	}
	var content io.Reader
	size := fi.Size()
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return "", "", err
		}
		mode, content, size = "120000", strings.NewReader(target), int64(len(target))
	case fi.Mode().IsRegular():
		f, err := fsx.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			return "", "", err
		}
		defer f.Close()
		mode, content = "100644", f
		if fi.Mode()&0o111 != 0 {
			mode = "100755"
		}
	default:
		return fi.Mode().Type().String(), "", nil
	}
	oid, err = blobID(content, size, oidLen)
	return mode, oid, err
}

// blobID is the id of the blob of content, which should hold size bytes:
// "" when it holds another number (it changed while it was read).
func blobID(content io.Reader, size int64, oidLen int) (string, error) {
	h := objectHash(oidLen)
	fmt.Fprintf(h, "blob %d\x00", size)
	if n, err := io.Copy(h, io.LimitReader(content, size+1)); err != nil || n != size {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
