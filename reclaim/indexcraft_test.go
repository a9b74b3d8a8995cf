package reclaim

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
)

// craftEntry is one entry of an index written by hand (SHA-1).
type craftEntry struct {
	name  string // as stored: in version 4, what follows the kept prefix
	strip int    // version 4: bytes of the previous path dropped
	full  int    // the path length the flags give
	flags uint16 // stage and assume-unchanged bits
	ext   uint16 // extended flags (skip-worktree, intent-to-add)
	mode  uint32
	oid   [sha1.Size]byte
}

// craftIndex writes entries as an index of version, checksum sealed.
func craftIndex(version uint32, entries []craftEntry) []byte {
	b := binary.BigEndian.AppendUint32([]byte("DIRC"), version)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		start := len(b)
		stat := make([]byte, ceStatLen)
		binary.BigEndian.PutUint32(stat[24:], e.mode)
		b = append(append(b, stat...), e.oid[:]...)
		flags := e.flags | uint16(min(e.full, ceNameMask))
		if e.ext != 0 {
			flags |= ceExtended
		}
		b = binary.BigEndian.AppendUint16(b, flags)
		if e.ext != 0 {
			b = binary.BigEndian.AppendUint16(b, e.ext)
		}
		if version == 4 {
			b = append(appendGitVarint(b, uint64(e.strip)), e.name...)
			b = append(b, 0)
			continue
		}
		b = append(b, e.name...)
		b = append(b, make([]byte, (len(b)-start+8)&^7-(len(b)-start))...)
	}
	return reseal(append(b, make([]byte, sha1.Size)...))
}

// appendGitVarint is git's offset varint, as gitVarint reads it.
func appendGitVarint(b []byte, v uint64) []byte {
	buf := []byte{byte(v & 0x7f)}
	for v >>= 7; v != 0; v >>= 7 {
		v--
		buf = append([]byte{0x80 | byte(v&0x7f)}, buf...)
	}
	return append(b, buf...)
}

// file is a plain entry of a version 4 index.
func file(name string, strip, full int) craftEntry {
	return craftEntry{name: name, strip: strip, full: full, mode: 0o100644, oid: sha1.Sum([]byte(name))}
}

// Version 4 stores each path as the previous one less a strip count,
// plus a suffix. The first entry has no previous path: git ignores its
// strip count, and so does the reader. A count past the previous path,
// or a path left empty, is refused (never a panic), whatever git does.
func TestParseIndexCraftedPaths(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "--quiet")
	g, _ := findGitDir(dir)
	cfg, _ := g.config()
	r, h := newRepo(dir, g, cfg), newHost(30)
	for _, c := range []struct {
		name     string
		version  uint32
		entries  []craftEntry
		want     []string // the paths read, in git's listing and the reader's
		refuses  string   // the reader's error (a regexp); "": it reads want
		gitFails bool     // with refuses: git ls-files fails on it too
	}{
		{"first entry's strip ignored", 4, []craftEntry{file("abc", 7, 3), file("d", 1, 3)}, []string{"abc", "abd"}, "", false},
		{"whole previous path stripped", 4, []craftEntry{file("abc", 0, 3), file("xyz", 3, 3)}, []string{"abc", "xyz"}, "", false},
		{"strip past the previous path", 4, []craftEntry{file("abc", 0, 3), file("d", 4, 1)}, nil, "index entry 1: bad path prefix", true},
		{"huge strip", 4, []craftEntry{file("abc", 0, 3), file("d", 1<<40, 1)}, nil, "index entry 1: bad path prefix", true},
		{"empty path, version 4", 4, []craftEntry{file("abc", 0, 3), file("", 3, 0)}, nil, "index entry 1: empty path", false},
		{"empty path, version 2", 2, []craftEntry{file("", 0, 0)}, nil, "index entry 0: empty path", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := craftIndex(c.version, c.entries)
			idx, err := parseIndex(b, sha1.Size)
			if err := os.WriteFile(filepath.Join(dir, ".git", "index"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			out, gitErr := r.git(context.Background(), h, "", lsFilesArgs...)
			if c.refuses != "" {
				if err == nil || !regexp.MustCompile(c.refuses).MatchString(err.Error()) {
					t.Fatalf("reader: %v, %v; want it to refuse (%s)", idx, err, c.refuses)
				}
				if c.gitFails && gitErr == nil {
					t.Fatalf("git ls-files read it: %q", out)
				}
				return
			}
			fromGit, perr := parseLsFiles(out)
			if err != nil || gitErr != nil || perr != nil || !reflect.DeepEqual(idx, fromGit) {
				t.Fatalf("reader: %v %v\ngit: %v %v %v", idx, err, fromGit, gitErr, perr)
			}
			for _, p := range c.want {
				if _, ok := idx[p]; !ok {
					t.Fatalf("no entry %q in %v", p, idx)
				}
			}
			if len(idx) != len(c.want) {
				t.Fatalf("entries %v, want %v", idx, c.want)
			}
		})
	}
}
