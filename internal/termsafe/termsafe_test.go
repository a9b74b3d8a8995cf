package termsafe

import (
	"strings"
	"testing"
)

// No byte of any input survives as a control a terminal acts on; the
// table of named cases lives with cmdutil.Safe, which delegates here.
func TestNoControlSurvives(t *testing.T) {
	for b := 0; b < 256; b++ {
		in := "x" + string([]byte{byte(b)}) + "y"
		for _, out := range []string{Line(in), strings.NewReplacer("\n", "", "\t", "").Replace(Text(in))} {
			for _, r := range out {
				if r < 0x20 || r >= 0x7f && r < 0xa0 {
					t.Fatalf("byte %#x: %q still holds control %U", b, out, r)
				}
			}
		}
	}
	if got := Line("a\x1b[2Jb\u202e"); got != `a\x1b[2Jb\u202e` {
		t.Fatalf("Line = %q", got)
	}
}
