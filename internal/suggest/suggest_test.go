package suggest

import (
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	profile := []string{"name", "host", "workdir_root", "shell", "env", "repositories",
		"prepare_script", "prepare_timeout", "cleanup_script", "reclaim_task_dir"}
	for _, tc := range []struct {
		word string
		want []string
	}{
		{"repos", []string{"repositories"}},
		{"repository", []string{"repositories"}},
		{"hostname", []string{"host"}},
		{"shel", []string{"shell"}},
		{"Shell", []string{"shell"}},
		{"workdir-root", []string{"workdir_root"}},
		{"envv", []string{"env"}},
		{"environment", []string{"env"}},
		{"prepare", []string{"prepare_script", "prepare_timeout"}},
		{"nam", []string{"name"}},
		{"zzzzzz", nil},
		{"e", nil}, // too short to be a prefix of anything meaningful
		{"x", nil},
	} {
		if got := Closest(tc.word, profile); !slices.Equal(got, tc.want) {
			t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestPhrase(t *testing.T) {
	if got := Phrase("repos", []string{"name", "repositories"}); got != " (did you mean repositories?)" {
		t.Fatalf("Phrase = %q", got)
	}
	if got := Phrase("zzzz", []string{"name"}); got != "" {
		t.Fatalf("Phrase with nothing close = %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"env", "envv", 1}, {"abc", "abc", 0}} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
