package fsx

import "testing"

// The chmod the hint suggests names the path quoted: one with a space,
// a ; or a quote is still that one path to the shell.
func TestHintQuotesThePath(t *testing.T) {
	e := &OwnershipError{Path: `/srv/k y;rm x'`, Reason: ReasonWritable}
	want := "run `chmod go-w '/srv/k y;rm x'\"'\"''` on the host if that is safe, or set workdir_root to a directory only you can write"
	if got := e.Hint(); got != want {
		t.Fatalf("Hint() = %s\nwant      %s", got, want)
	}
}
