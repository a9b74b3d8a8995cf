package reclaim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// indexCase is a checkout built with real git, and what its index must
// hold (path and tag, in git's listing and in the reader's) or why the
// reader must leave it to git.
type indexCase struct {
	name     string
	format   string // "sha256" for a repository of that object format
	setup    func(t testing.TB, dir string)
	rewrite  func(t *testing.T, dir string) // run again after each version change
	want     map[string]byte                // entries the fixture must have made
	exts     []string                       // extensions the index file must carry
	declines string                         // the reader's reason for asking git (a regexp), "" when it reads the file
	// When it declines: why parseIndex, given the file, does too ("": it
	// reads what git lists).
	parseDeclines string
}

func indexCases() []indexCase {
	return []indexCase{
		{name: "paths and modes", setup: setupPaths, want: map[string]byte{
			"run.sh": 'H', "link": 'H', "héllo/日本.txt": 'H', "with space": 'H', "tab\there": 'H', "new\nline": 'H',
			longPath(): 'H', "deep/a/b/c07": 'H', "sub": 'H'}, exts: []string{"TREE"}},
		{name: "flags", setup: setupFlags, want: map[string]byte{"skip": 'S', "assumed": 'h', "both": 's', "ita": 'H', "README": 'H'}},
		{name: "unmerged", setup: setupConflict, want: map[string]byte{"f": 'M', "d": 'M', "resolved": 'H'}, exts: []string{"REUC"}},
		{name: "sha256", format: "sha256", setup: setupFlags, want: map[string]byte{"skip": 'S', "assumed": 'h', "ita": 'H'}},
		{name: "sha256 unmerged", format: "sha256", setup: setupConflict, want: map[string]byte{"f": 'M', "d": 'M'}},
		{name: "untracked cache", setup: func(t testing.TB, dir string) {
			setupPaths(t, dir)
			gitT(t, dir, "config", "core.untrackedCache", "true")
			gitT(t, dir, "status", "--porcelain")
		}, want: map[string]byte{"run.sh": 'H'}, exts: []string{"UNTR"}},
		{name: "no index", setup: func(testing.TB, string) {}, want: map[string]byte{}},
		{name: "empty index", setup: func(t testing.TB, dir string) {
			setupPaths(t, dir)
			gitT(t, dir, "read-tree", "--empty")
		}, want: map[string]byte{}},
		{name: "split index", setup: func(t testing.TB, dir string) {
			setupFlags(t, dir)
			gitT(t, dir, "update-index", "--split-index")
		}, rewrite: func(t *testing.T, dir string) {
			// Every entry in the shared index, then a new one beside it.
			gitT(t, dir, "update-index", "--split-index")
			writeFile(t, filepath.Join(dir, "later"), "later\n")
			gitT(t, dir, "add", "later")
			// A replaced entry's name is the shared index's: empty here.
		}, exts: []string{"link"}, declines: `extension "link"|empty path`, parseDeclines: `extension "link"|empty path`},
		{name: "end of entries", setup: func(t testing.TB, dir string) {
			gitT(t, dir, "config", "index.recordEndOfIndexEntries", "true")
			setupPaths(t, dir)
		}, exts: []string{"EOIE"}, declines: "end-of-entries", parseDeclines: "end-of-entries"},
		{name: "sparse index", setup: func(t testing.TB, dir string) {
			setupSparse(t, dir)
			gitT(t, dir, "config", "index.sparse", "true")
			gitT(t, dir, "sparse-checkout", "set", "--cone", "in")
		}, exts: []string{"sdir"}, declines: "index.sparse is set", parseDeclines: "mode 40000"},
		{name: "sparse checkout, full index", setup: func(t testing.TB, dir string) {
			setupSparse(t, dir)
			gitT(t, dir, "sparse-checkout", "set", "--no-cone", "/in/")
		}, want: map[string]byte{"in/a": 'H', "out/b": 'S'}, declines: `core.sparsecheckout is set \(.*config.worktree:`},
		// Patterns apply where your own config turns sparse checkout on.
		{name: "sparse-checkout patterns, no setting", setup: func(t testing.TB, dir string) {
			setupSparse(t, dir)
			writeFile(t, filepath.Join(dir, ".git", "info", "sparse-checkout"), "/in/\n")
			gitT(t, dir, "update-index", "--skip-worktree", "out/b")
		}, want: map[string]byte{"in/a": 'H', "out/b": 'S'}, declines: "sparse-checkout patterns"},
	}
}

func setupPaths(t testing.TB, dir string) {
	for _, p := range []string{"README", "héllo/日本.txt", "with space", "tab\there", "new\nline"} {
		writeFile(t, filepath.Join(dir, p), p+"\n")
	}
	for i := range 20 { // paths sharing long prefixes, as version 4 compresses them
		writeFile(t, filepath.Join(dir, "deep", "a", "b", fmt.Sprintf("c%02d", i)), "x\n")
	}
	writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("README", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "--quiet", "-m", "paths")
	head := gitT(t, dir, "rev-parse", "HEAD")
	blob := gitT(t, dir, "rev-parse", "HEAD:README")
	// A gitlink, and a path longer than the 12 bits its flags hold.
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
	gitT(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+longPath())
}

func setupSparse(t testing.TB, dir string) {
	for _, p := range []string{"in/a", "out/b", "out/c"} {
		writeFile(t, filepath.Join(dir, p), p+"\n")
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "--quiet", "-m", "sparse")
}

// longPath is over 4095 bytes, in components a file system would take.
func longPath() string { return strings.Repeat(strings.Repeat("d", 200)+"/", 21) + "end" }

func setupFlags(t testing.TB, dir string) {
	for _, p := range []string{"README", "skip", "assumed", "both"} {
		writeFile(t, filepath.Join(dir, p), p+"\n")
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "--quiet", "-m", "flags")
	gitT(t, dir, "update-index", "--skip-worktree", "skip", "both")
	gitT(t, dir, "update-index", "--assume-unchanged", "assumed", "both")
	writeFile(t, filepath.Join(dir, "ita"), "intent\n")
	gitT(t, dir, "add", "-N", "ita")
}

// setupConflict leaves a real merge's conflicts: f changed on both sides
// (stages 1, 2, 3), d changed here and deleted there (1, 2), and
// resolved, whose stages the resolve-undo extension keeps.
func setupConflict(t testing.TB, dir string) {
	for _, p := range []string{"f", "d", "resolved"} {
		writeFile(t, filepath.Join(dir, p), "base\n")
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "--quiet", "-m", "base")
	gitT(t, dir, "checkout", "--quiet", "-b", "other")
	writeFile(t, filepath.Join(dir, "f"), "other\n")
	writeFile(t, filepath.Join(dir, "resolved"), "other\n")
	gitT(t, dir, "rm", "--quiet", "d")
	gitT(t, dir, "commit", "--quiet", "-am", "other")
	gitT(t, dir, "checkout", "--quiet", "main")
	for _, p := range []string{"f", "d", "resolved"} {
		writeFile(t, filepath.Join(dir, p), "main\n")
	}
	gitT(t, dir, "commit", "--quiet", "-am", "main")
	if err := gitCmd(dir, "merge", "other").Run(); err == nil {
		t.Fatal("fixture: the merge did not conflict")
	}
	writeFile(t, filepath.Join(dir, "resolved"), "both\n")
	gitT(t, dir, "add", "resolved")
}

// TestIndexFileMatchesLsFiles builds each case with real git, writes its
// index in versions 2, 3 and 4 and, each, with the all-zero checksum
// index.skipHash writes, and compares the reader's entries with what
// the probe's `git ls-files` lists, entry for entry.
func TestIndexFileMatchesLsFiles(t *testing.T) {
	for _, c := range indexCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			init := []string{"init", "--quiet"}
			if c.format != "" {
				init = append(init, "--object-format="+c.format)
			}
			gitT(t, dir, init...)
			c.setup(t, dir)
			if c.want != nil && len(c.want) == 0 {
				sameIndex(t, dir, c, 0)
				return
			}
			for _, v := range []string{"2", "3", "4"} {
				gitT(t, dir, "update-index", "--index-version", v)
				if c.rewrite != nil {
					c.rewrite(t, dir)
				}
				b := sameIndex(t, dir, c, v[0]-'0')
				hashLen := 20
				if c.format == "sha256" {
					hashLen = 32
				}
				copy(b[len(b)-hashLen:], make([]byte, hashLen))
				if err := os.WriteFile(filepath.Join(dir, ".git", "index"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				sameIndex(t, dir, c, v[0]-'0')
			}
		})
	}
}

// sameIndex checks the index of the checkout at dir against c, and
// returns the file's bytes. version: the one written (0: not checked).
func sameIndex(t *testing.T, dir string, c indexCase, version byte) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range c.exts {
		if !bytes.Contains(b, []byte(e)) {
			t.Fatalf("fixture: the index has no %s extension", e)
		}
	}
	// Version 2 is written as 3 when an entry has extended flags, 3 as 2
	// when none has.
	if version != 0 && b[7] != version && !(version+b[7] == 5) {
		t.Fatalf("fixture: index version %d, want %d", b[7], version)
	}
	fromGit, fromFile, fileErr := bothIndexes(t, dir)
	if c.declines != "" {
		if fileErr == nil || !regexp.MustCompile(c.declines).MatchString(fileErr.Error()) {
			t.Fatalf("reader: %v, want it to decline (%s)", fileErr, c.declines)
		}
		hashLen := 20
		if c.format == "sha256" {
			hashLen = 32
		}
		parsed, err := parseIndex(b, hashLen)
		switch {
		case c.parseDeclines != "" && (err == nil || !regexp.MustCompile(c.parseDeclines).MatchString(err.Error())):
			t.Fatalf("parseIndex: %v, want it to decline (%s)", err, c.parseDeclines)
		case c.parseDeclines != "":
			return b
		case err != nil:
			t.Fatalf("parseIndex declined: %v", err)
		}
		fromFile = parsed
	} else if fileErr != nil {
		t.Fatalf("version %d: reader declined: %v", b[7], fileErr)
	}
	if !reflect.DeepEqual(fromFile, fromGit) {
		t.Fatalf("version %d: the reader's entries differ from git ls-files'\nreader: %v\ngit:    %v", b[7], fromFile, fromGit)
	}
	for p, tag := range c.want {
		if e, ok := fromGit[p]; !ok || e.tag != tag {
			t.Fatalf("fixture: git lists %q as %+v, want tag %c", p, e, tag)
		}
	}
	if len(c.want) == 0 && len(fromGit) != 0 {
		t.Fatalf("fixture: git lists %v, want nothing", fromGit)
	}
	return b
}

// bothIndexes is the index of the checkout at dir as the probe's git
// lists it, and as the reader reads it (fileErr: it leaves it to git).
func bothIndexes(t *testing.T, dir string) (fromGit, fromFile map[string]indexEntry, fileErr error) {
	t.Helper()
	g, cfg := repoOf(t, dir)
	r := newRepo(dir, g, cfg)
	out, err := r.git(context.Background(), newHost(30), "", lsFilesArgs...)
	if err != nil {
		t.Fatal(err)
	}
	if fromGit, err = parseLsFiles(out); err != nil {
		t.Fatal(err)
	}
	head, _ := gitCmd(dir, "rev-parse", "-q", "--verify", "HEAD").Output()
	fromFile, fileErr = readIndexFile(g, cfg, strings.TrimSpace(string(head)))
	return fromGit, fromFile, fileErr
}
