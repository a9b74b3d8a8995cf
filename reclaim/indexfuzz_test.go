package reclaim

import (
	"bytes"
	"context"
	"crypto/sha1"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParseIndex: the reader never panics, never reads a file whose
// checksum does not match, and whatever it reads, git ls-files reads
// too, to the same entries. seal picks the checksum: 0 as given, 1
// written again, 2 all zero (index.skipHash).
func FuzzParseIndex(f *testing.F) {
	for _, s := range []struct {
		setup   func(t testing.TB, dir string)
		version string
	}{{setupFlags, "3"}, {setupFlags, "4"}, {setupPaths, "2"}, {setupPaths, "4"}, {setupConflict, "2"}} {
		dir := f.TempDir()
		gitT(f, dir, "init", "--quiet")
		s.setup(f, dir)
		gitT(f, dir, "update-index", "--index-version", s.version)
		b, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, byte(0))
	}
	dir := f.TempDir()
	gitT(f, dir, "init", "--quiet")
	g, err := findGitDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	cfg, err := g.config()
	if err != nil {
		f.Fatal(err)
	}
	r, h := newRepo(dir, g, cfg), newHost(30)
	f.Fuzz(func(t *testing.T, b []byte, seal byte) {
		b = append([]byte{}, b...)
		if len(b) >= sha1.Size {
			switch seal % 3 {
			case 1:
				b = reseal(b)
			case 2:
				copy(b[len(b)-sha1.Size:], make([]byte, sha1.Size))
			}
		}
		idx, err := parseIndex(b, sha1.Size)
		if err != nil {
			return
		}
		if sum, trailer := sha1.Sum(b[:len(b)-sha1.Size]), b[len(b)-sha1.Size:]; !isZero(trailer) && !bytes.Equal(sum[:], trailer) {
			t.Fatalf("read an index whose checksum does not match: %v", idx)
		}
		if err := os.WriteFile(filepath.Join(dir, ".git", "index"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := r.git(context.Background(), h, "", lsFilesArgs...)
		if err != nil {
			t.Fatalf("the reader read %v, git fails: %v", idx, err)
		}
		fromGit, err := parseLsFiles(out)
		if err != nil || !reflect.DeepEqual(idx, fromGit) {
			t.Fatalf("reader: %v\ngit: %v %v", idx, fromGit, err)
		}
	})
}
