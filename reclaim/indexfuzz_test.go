package reclaim

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// indexSeeds are index files real git wrote: the fixtures' flags, paths
// and conflicts, in versions 2 to 4.
func indexSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, s := range []struct {
		setup   func(t testing.TB, dir string)
		version string
	}{{setupFlags, "3"}, {setupFlags, "4"}, {setupPaths, "2"}, {setupPaths, "4"}, {setupConflict, "2"}} {
		dir := tb.TempDir()
		gitT(tb, dir, "init", "--quiet")
		s.setup(tb, dir)
		gitT(tb, dir, "update-index", "--index-version", s.version)
		b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// sealed is b with the checksum seal picks: 0 as given, 1 written again,
// 2 all zero (index.skipHash).
func sealed(b []byte, seal byte) []byte {
	b = append([]byte{}, b...)
	if len(b) >= sha1.Size {
		switch seal % 3 {
		case 1:
			b = reseal(b)
		case 2:
			copy(b[len(b)-sha1.Size:], make([]byte, sha1.Size))
		}
	}
	return b
}

// encodeIndex writes idx again as an index of version 3 or 4.
func encodeIndex(t *testing.T, idx map[string]indexEntry, version uint32) []byte {
	t.Helper()
	var entries []craftEntry
	prev := ""
	for _, name := range slices.Sorted(maps.Keys(idx)) {
		e := idx[name]
		mode, err := strconv.ParseUint(e.mode, 8, 32)
		oid, herr := hex.DecodeString(e.oid)
		if err != nil || herr != nil || len(oid) != sha1.Size {
			t.Fatalf("read an entry it cannot have: %q %+v", name, e)
		}
		c := craftEntry{name: name, full: len(name), mode: uint32(mode)}
		copy(c.oid[:], oid)
		switch e.tag | 0x20 {
		case 'm':
			c.flags |= 1 << 12 // a stage
		case 's':
			c.ext = ceSkipWorktree
		}
		if e.tag >= 'a' {
			c.flags |= ceValid
		}
		if version == 4 {
			common := 0
			for common < min(len(prev), len(name)) && prev[common] == name[common] {
				common++
			}
			c.name, c.strip = name[common:], len(prev)-common
		}
		entries, prev = append(entries, c), name
	}
	return craftIndex(version, entries)
}

// FuzzParseIndex: the reader never panics, never reads a file whose
// checksum does not match, and what it reads, written again, it reads
// the same. That git lists the same is TestParseIndexSeedsAgreeWithGit's.
func FuzzParseIndex(f *testing.F) {
	for _, b := range indexSeeds(f) {
		f.Add(b, byte(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, seal byte) {
		b = sealed(b, seal)
		idx, err := parseIndex(b, sha1.Size)
		if err != nil {
			return
		}
		if sum, trailer := sha1.Sum(b[:len(b)-sha1.Size]), b[len(b)-sha1.Size:]; !isZero(trailer) && !bytes.Equal(sum[:], trailer) {
			t.Fatalf("read an index whose checksum does not match: %v", idx)
		}
		for _, v := range []uint32{3, 4} {
			again, err := parseIndex(encodeIndex(t, idx, v), sha1.Size)
			if err != nil || !reflect.DeepEqual(again, idx) {
				t.Fatalf("written again as version %d, read %v (%v), want %v", v, again, err, idx)
			}
		}
	})
}

// TestParseIndexSeedsAgreeWithGit: whatever the reader reads of the fuzz
// seeds, under each seal, git ls-files reads too, to the same entries.
func TestParseIndexSeedsAgreeWithGit(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "--quiet")
	g, cfg := repoOf(t, dir)
	r, h := newRepo(dir, g, cfg), newHost(30)
	for i, seed := range indexSeeds(t) {
		for seal := range byte(3) {
			b := sealed(seed, seal)
			idx, err := parseIndex(b, sha1.Size)
			if err != nil {
				t.Fatalf("seed %d, seal %d: %v", i, seal, err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".git", "index"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := r.git(context.Background(), h, "", lsFilesArgs...)
			if err != nil {
				t.Fatalf("seed %d, seal %d: the reader read %v, git fails: %v", i, seal, idx, err)
			}
			fromGit, err := parseLsFiles(out)
			if err != nil || !reflect.DeepEqual(idx, fromGit) {
				t.Fatalf("seed %d, seal %d: reader: %v\ngit: %v %v", i, seal, idx, fromGit, err)
			}
		}
	}
}
