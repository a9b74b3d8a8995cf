package reclaim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Files at the top of a gitdir name commits too: ORIG_HEAD (the commit a
// reset or rebase moved away from), FETCH_HEAD (what a fetch brought,
// from wherever it was fetched), MERGE_HEAD and the like. With reflogs
// switched off or removed, one may be all that holds an agent's commit.

// isPseudoRef: git's own names for them, upper case ending in _HEAD (not
// HEAD itself, which status reports; not AUTO_MERGE, a merge's tree).
// Checked byte by byte: the helper links no regexp.
func isPseudoRef(name string) bool {
	stem, ok := strings.CutSuffix(name, "_HEAD")
	if !ok || stem == "" || stem[0] < 'A' || stem[0] > 'Z' {
		return false
	}
	for i := 0; i < len(stem); i++ {
		if c := stem[i]; (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}

// pseudoRefs lists the objects those files name, in the common gitdir
// and then the worktree's own.
func (g gitDir) pseudoRefs() ([]localRef, error) {
	var out []localRef
	for _, d := range g.dirs() {
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !isPseudoRef(e.Name()) {
				continue
			}
			p := filepath.Join(d, e.Name())
			b, err := readSmallFile(p)
			if err != nil {
				return nil, err
			}
			oids, err := parsePseudoRef(b)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", p, err)
			}
			for _, oid := range oids {
				out = append(out, localRef{e.Name(), oid})
			}
		}
	}
	return out, nil
}

// parsePseudoRef reads one object id per line, first on it (FETCH_HEAD
// follows it with a tab and what was fetched); a symbolic one ("ref:")
// names a ref read on its own.
func parsePseudoRef(b []byte) ([]string, error) {
	var oids []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\r\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "ref: ") {
			continue
		}
		oid, _, _ := strings.Cut(strings.TrimRight(line, "\r"), "\t")
		if !oidRE.MatchString(oid) {
			return nil, fmt.Errorf("unexpected line %.80q", line)
		}
		oids = append(oids, oid)
	}
	return oids, nil
}
