package taskdir

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// MaskURLs hides what the expression ://[^/@\s]+@ matches, as its
// replacement by "://***@" would, on fixed cases and on random text made
// of the bytes that matter.
func TestMaskURLsAsTheExpression(t *testing.T) {
	re := regexp.MustCompile(`://[^/@\s]+@`)
	check := func(s string) {
		t.Helper()
		if got, want := MaskURLs(s), re.ReplaceAllString(s, "://***@"); got != want {
			t.Errorf("%q: got %q, want %q", s, got, want)
		}
	}
	for _, s := range []string{"", "fatal: https://u:tok@github.com/o/r.git not found", "a://b://c@d", "://@", ":///x@",
		"ssh://git@h:22/r and https://x:y@z/ and ftp://q@", "https://a b@c", "x://a\tb@c://d@e"} {
		check(s)
	}
	alphabet := []byte("ab:/@ \t\nx")
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		check(string(b))
	}
}
