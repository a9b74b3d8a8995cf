package ascii

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// Each Word the module uses answers as the regular expression it
// replaces, on strings built from the bytes that matter at the edges of
// each class, and on every length around the limits.
func TestWordAgreesWithItsRegexp(t *testing.T) {
	cases := []struct {
		w  Word
		re string
	}{
		{Word{First: Lower + Digits, Rest: Lower + Digits + "._-"}, `^[a-z0-9][a-z0-9._-]*$`},
		{Word{First: Alnum, Rest: Alnum + "._-"}, `^[A-Za-z0-9][A-Za-z0-9._-]*$`},
		{Word{First: Letters + "_", Rest: Alnum + "_"}, `^[A-Za-z_][A-Za-z0-9_]*$`},
		{Word{First: Alnum, Rest: Alnum + "._-", Max: 128}, `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`},
		{Word{First: LowerHex, Rest: LowerHex, Lens: []int{40, 64}}, `^([0-9a-f]{40}|[0-9a-f]{64})$`},
	}
	alphabet := []byte("azAZ09fg_.-/@ \n\x00\xff:")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		re := regexp.MustCompile(c.re)
		check := func(s string) {
			if got, want := c.w.MatchString(s), re.MatchString(s); got != want {
				t.Errorf("%s: %q: got %v, want %v", c.re, s, got, want)
			}
		}
		check("")
		for n := 1; n < 140; n++ {
			for range 40 {
				b := make([]byte, n)
				for i := range b {
					// Mostly bytes of the class, so long strings can match.
					if rng.IntN(8) == 0 {
						b[i] = alphabet[rng.IntN(len(alphabet))]
					} else {
						b[i] = c.w.Rest[rng.IntN(len(c.w.Rest))]
					}
				}
				check(string(b))
			}
			// And one wholly of the class: the limits must decide.
			b := []byte{c.w.First[rng.IntN(len(c.w.First))]}
			for len(b) < n {
				b = append(b, c.w.Rest[rng.IntN(len(c.w.Rest))])
			}
			check(string(b))
		}
	}
}
