package reclaim

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/gitsafe"
)

// reseal writes b's checksum again, as git would have.
func reseal(b []byte) []byte {
	sum := sha1.Sum(b[:len(b)-sha1.Size])
	return append(b[:len(b)-sha1.Size], sum[:]...)
}

// withExtension appends an extension after the last one.
func withExtension(b []byte, sig string, data []byte) []byte {
	out := append([]byte{}, b[:len(b)-sha1.Size]...)
	out = append(out, sig...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	out = append(append(out, data...), make([]byte, sha1.Size)...)
	return reseal(out)
}

// flagsOf is the offset of the flags of the entry named name (a version
// 2 or 3 index, SHA-1): just before its path, after its extended flags.
func flagsOf(t *testing.T, b []byte, name string, extended bool) int {
	t.Helper()
	i := bytes.Index(b, append([]byte(name), 0))
	if i < 0 {
		t.Fatalf("fixture: no entry %q", name)
	}
	if extended {
		return i - 4
	}
	return i - 2
}

// garbage: what git makes of it is not pinned (it reads whatever follows
// the entries as one more).
const garbage = "more entries than the file holds"

// TestIndexFileDeclines: each index the reader is not sure of is left
// to git, whether git reads it (a checksum it never checks, an odd
// mode, an extension it may ignore) or fails on it (then the proof's
// `git ls-files` fails, and the proof ends unknown).
func TestIndexFileDeclines(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "--quiet")
	setupFlags(t, dir)
	gitT(t, dir, "update-index", "--index-version", "3")
	indexPath := filepath.Join(dir, ".git", "index")
	orig, err := os.ReadFile(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) func() []byte {
		return func() []byte { return f(append([]byte{}, orig...)) }
	}
	for _, c := range []struct {
		name     string
		index    func() []byte
		gitReads bool   // false: git ls-files fails on it
		declines string // "": the reader reads it, and agrees with git
	}{
		{"checksum mismatch", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), true, "checksum mismatch"},
		{"entry changed under its checksum", edit(func(b []byte) []byte {
			b[flagsOf(t, b, "skip", true)+2] = 0 // skip-worktree cleared, the checksum left
			return b
		}), true, "checksum mismatch"},
		{"unknown optional extension", edit(func(b []byte) []byte { return withExtension(b, "ZZZZ", []byte("data")) }), true, ""},
		{"unknown required extension", edit(func(b []byte) []byte { return withExtension(b, "zzzz", []byte("data")) }), false, `extension "zzzz"`},
		{"extension past the end", edit(func(b []byte) []byte {
			b = withExtension(b, "ZZZZ", []byte("data"))
			binary.BigEndian.PutUint32(b[len(b)-sha1.Size-8:], 9)
			return reseal(b)
		}), true, "do not fit"},
		{"bytes after the extensions", edit(func(b []byte) []byte {
			return reseal(append(append(b[:len(b)-sha1.Size], "ZZ"...), make([]byte, sha1.Size)...))
		}), true, "do not fit"},
		{"unknown version", edit(func(b []byte) []byte { b[7] = 5; return reseal(b) }), false, "index header"},
		{"not an index", edit(func(b []byte) []byte { b[0] = 'X'; return reseal(b) }), false, "index header"},
		{"shorter than a header", edit(func(b []byte) []byte { return b[:20] }), false, "shorter"},
		{"unknown extended flag", edit(func(b []byte) []byte {
			b[flagsOf(t, b, "skip", true)+2] |= 0x80
			return reseal(b)
		}), false, "extended flags"},
		{"odd mode", edit(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[12+24:], 0o100664)
			return reseal(b)
		}), true, "mode 100664"},
		{"path length not its flags'", edit(func(b []byte) []byte {
			b[flagsOf(t, b, "README", false)+1]-- // "READM", then a byte that is no NUL
			return reseal(b)
		}), true, "path length"},
		{garbage, edit(func(b []byte) []byte {
			// git would read past the entries, whatever lies there
			binary.BigEndian.PutUint32(b[8:], binary.BigEndian.Uint32(b[8:])+1)
			return reseal(b)
		}), true, "index entry 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(indexPath, c.index(), 0o644); err != nil {
				t.Fatal(err)
			}
			g, _ := findGitDir(dir)
			cfg, _ := g.config()
			out, gitErr := newRepo(dir, g, cfg).git(context.Background(), newHost(30), "", lsFilesArgs...)
			if (gitErr == nil) != c.gitReads && c.name != garbage {
				t.Fatalf("git ls-files: %v, want it to read the index: %v", gitErr, c.gitReads)
			}
			idx, err := readIndexFile(g, cfg, "")
			if c.declines != "" {
				if err == nil || !regexp.MustCompile(c.declines).MatchString(err.Error()) {
					t.Fatalf("reader: %v, want it to decline (%s)", err, c.declines)
				}
				return
			}
			fromGit, perr := parseLsFiles(out)
			if err != nil || perr != nil || !reflect.DeepEqual(idx, fromGit) {
				t.Fatalf("reader: %v %v\n%v\ngit: %v", err, perr, idx, fromGit)
			}
		})
	}
}

// The object format is the common config's, and only as git reads it:
// anything else is git's to read.
func TestIndexHashLen(t *testing.T) {
	common := "/r/.git/config"
	entry := func(key, value, where string) gitsafe.Entry {
		e := gitsafe.Entry{Section: "extensions", Name: "objectformat", Value: value, HasValue: true, Where: where + ":3"}
		if key == "version" {
			e.Section, e.Name = "core", "repositoryformatversion"
		}
		return e
	}
	v1 := entry("version", "1", common)
	for _, c := range []struct {
		name string
		cfg  gitsafe.Config
		want int // 0: declined
	}{
		{"none", nil, 20},
		{"sha256", gitsafe.Config{v1, entry("", "sha256", common)}, 32},
		{"sha1", gitsafe.Config{v1, entry("", "sha1", common)}, 20},
		{"version 0", gitsafe.Config{entry("version", "0", common), entry("", "sha256", common)}, 0},
		{"no version", gitsafe.Config{entry("", "sha256", common)}, 0},
		{"in config.worktree", gitsafe.Config{v1, entry("", "sha256", "/r/.git/config.worktree")}, 0},
		{"unknown", gitsafe.Config{v1, entry("", "SHA256", common)}, 0},
		{"two values", gitsafe.Config{v1, entry("", "sha256", common), entry("", "sha1", common)}, 0},
		{"no value", gitsafe.Config{v1, {Section: "extensions", Name: "objectformat", Where: common + ":4"}}, 0},
	} {
		got, err := indexHashLen(c.cfg, common)
		if got != c.want || (err == nil) != (c.want != 0) {
			t.Errorf("%s: %d, %v; want %d", c.name, got, err, c.want)
		}
	}
}

// Regression: with core.sparseCheckout on and no patterns, git clears
// skip-worktree from the files present as it reads the index; the file
// says skip-worktree. So any sparse setting, in any file of the
// checkout's config, leaves the index to git.
func TestIndexFileDeclinesSparseSettings(t *testing.T) {
	for _, c := range []struct{ scope, key string }{
		{"--local", "core.sparseCheckout"},
		{"--worktree", "core.sparseCheckout"},
		{"--local", "core.sparseCheckoutCone"},
		{"--local", "index.sparse"},
	} {
		t.Run(c.scope+" "+c.key, func(t *testing.T) {
			dir := t.TempDir()
			gitT(t, dir, "init", "--quiet")
			setupFlags(t, dir)
			if c.scope == "--worktree" {
				gitT(t, dir, "config", "extensions.worktreeConfig", "true")
			}
			gitT(t, dir, "config", c.scope, c.key, "true")
			fromGit, _, err := bothIndexes(t, dir)
			if err == nil || !strings.Contains(err.Error(), strings.ToLower(c.key)+" is set") {
				t.Fatalf("reader: %v, want it to decline (%s is set)", err, c.key)
			}
			b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := parseIndex(b, sha1.Size)
			if err != nil || parsed["skip"].tag != 'S' {
				t.Fatalf("fixture: the file says skip is %+v (%v), want skip-worktree", parsed["skip"], err)
			}
			// Where git reads it otherwise than the file says, this is
			// why the reader must not answer.
			if c.key == "core.sparseCheckout" && fromGit["skip"].tag != 'H' {
				t.Fatalf("fixture: git lists skip as %+v, want it cleared (H)", fromGit["skip"])
			}
		})
	}
}

// A HEAD whose length is not the repository's hash says the reader's
// idea of the object format is wrong: the index is left to git.
func TestIndexFileDeclinesHeadOfAnotherHash(t *testing.T) {
	for _, c := range []struct {
		format string
		hexLen int // the HEAD of the other format
	}{{"sha1", 64}, {"sha256", 40}} {
		t.Run(c.format, func(t *testing.T) {
			dir := t.TempDir()
			gitT(t, dir, "init", "--quiet", "--object-format="+c.format)
			setupFlags(t, dir)
			g, cfg := repoOf(t, dir)
			head := gitT(t, dir, "rev-parse", "HEAD")
			if _, err := readIndexFile(g, cfg, head); err != nil {
				t.Fatalf("fixture: the reader declines the real HEAD: %v", err)
			}
			other := strings.Repeat("a", c.hexLen)
			if idx, err := readIndexFile(g, cfg, other); err == nil || !strings.Contains(err.Error(), "is not a") {
				t.Fatalf("reader with HEAD %s: %v, %v; want it to decline", other, idx, err)
			}
		})
	}
}
