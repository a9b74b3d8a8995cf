package reclaim

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
)

// indexTree is the id of the tree the index's entries make, as `git
// write-tree` would write it: each directory's entries in order, a
// subdirectory as its own tree. stats are the entries in the file's
// order, which must be git's (strictly ascending paths); a path git
// would refuse, or a submodule, is an error.
func indexTree(stats []indexStat, idx map[string]indexEntry, hashLen int) (string, error) {
	for i, s := range stats {
		if i > 0 && stats[i-1].path >= s.path {
			return "", fmt.Errorf("index entries out of order at %q", s.path)
		}
		for _, part := range strings.Split(s.path, "/") {
			if part == "" || part == "." || part == ".." || strings.EqualFold(part, ".git") {
				return "", fmt.Errorf("index path %q", s.path)
			}
		}
		if m := idx[s.path].mode; m == gitlinkMode {
			return "", fmt.Errorf("index entry %q is a submodule", s.path)
		}
	}
	sum, rest, err := subtree(stats, "", idx, hashLen)
	if err != nil {
		return "", err
	}
	if len(rest) > 0 {
		return "", fmt.Errorf("index entry %q outside the tree", rest[0].path)
	}
	return hex.EncodeToString(sum), nil
}

// subtree hashes the tree of the entries at the start of stats below
// prefix ("" or "dir/"), and returns the entries after them.
func subtree(stats []indexStat, prefix string, idx map[string]indexEntry, hashLen int) ([]byte, []indexStat, error) {
	var body bytes.Buffer
	for len(stats) > 0 && strings.HasPrefix(stats[0].path, prefix) {
		name := stats[0].path[len(prefix):]
		if dir, _, ok := strings.Cut(name, "/"); ok {
			sum, rest, err := subtree(stats, prefix+dir+"/", idx, hashLen)
			if err != nil {
				return nil, nil, err
			}
			fmt.Fprintf(&body, "40000 %s\x00", dir)
			body.Write(sum)
			stats = rest
			continue
		}
		e := idx[stats[0].path]
		raw, err := hex.DecodeString(e.oid)
		if err != nil || len(raw) != hashLen {
			return nil, nil, fmt.Errorf("index entry %q: object %q", stats[0].path, e.oid)
		}
		fmt.Fprintf(&body, "%s %s\x00", e.mode, name)
		body.Write(raw)
		stats = stats[1:]
	}
	h := objectHash(2 * hashLen)
	fmt.Fprintf(h, "tree %d\x00", body.Len())
	h.Write(body.Bytes())
	return h.Sum(nil), stats, nil
}
