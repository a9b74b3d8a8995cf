//go:build bench

package reclaim

import (
	"context"
	"testing"
)

// BenchmarkIndexEntries: a checkout's index as the proof gets it, read
// from the file, next to the git ls-files it replaces. Prints; asserts
// nothing of the times.
//
//	go test -tags bench -run '^$' -bench BenchmarkIndexEntries ./reclaim/
func BenchmarkIndexEntries(b *testing.B) {
	dir := b.TempDir()
	gitT(b, dir, "init", "--quiet")
	setupPaths(b, dir)
	g, cfg := repoOf(b, dir)
	b.Run("file", func(b *testing.B) {
		for b.Loop() {
			if _, err := readIndexFile(g, cfg, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	r, h := newRepo(dir, g, cfg), newHost(30)
	b.Run("git ls-files", func(b *testing.B) {
		for b.Loop() {
			out, err := r.git(context.Background(), h, "", lsFilesArgs...)
			if err == nil {
				_, err = parseLsFiles(out)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
