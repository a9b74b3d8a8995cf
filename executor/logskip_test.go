package executor

import (
	"strings"
	"testing"
)

// The notice of a skip names the session, both generations, and what
// was lost: the bytes, or that an older controller does not count them.
func TestNoticeSkip(t *testing.T) {
	got := noticeSkip("sabc", LogSkip{From: "1-aaaaaaaa", To: "3-bbbbbbbb", Generations: 1, Bytes: 4096})
	want := "session sabc: the log was rotated past this follower: 1 generation(s) between 1-aaaaaaaa and 3-bbbbbbbb, 4096 bytes of output, were not shown; going on at the start of 3-bbbbbbbb"
	if got != want {
		t.Fatalf("notice %q, want %q", got, want)
	}
	old := noticeSkip("sabc", LogSkip{From: "1-aaaaaaaa", To: "4-cccccccc", Generations: 2, Bytes: -1})
	if !strings.Contains(old, "2 generation(s) between 1-aaaaaaaa and 4-cccccccc, output its controller (older than this build) does not count,") {
		t.Fatalf("notice without a count: %q", old)
	}
}
