package cmdutil

import (
	"errors"
	"strings"
	"testing"
)

// Whatever a host prints reaches a terminal as visible text: no byte of
// the output may be a control a terminal acts on.
func TestSafeEscapesWhatATerminalActsOn(t *testing.T) {
	cases := []struct{ in, safe, text string }{
		{"git version 2.39.5", "git version 2.39.5", "git version 2.39.5"},
		{"ok\rSHA256:forged", `ok\rSHA256:forged`, `ok\rSHA256:forged`},
		{"\x1b[2K\x1b[1Aup", `\x1b[2K\x1b[1Aup`, `\x1b[2K\x1b[1Aup`},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"bell\a del\x7f nul\x00", `bell\x07 del\x7f nul\x00`, `bell\x07 del\x7f nul\x00`},
		{"c1 \u009b31m", `c1 \u009b31m`, `c1 \u009b31m`},
		{"raw \x9b31m", `raw \x9b31m`, `raw \x9b31m`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`, `bidi \u202egnp.exe`},
		{"zero\u200bwidth", `zero\u200bwidth`, `zero\u200bwidth`},
		{"héllo 世界 🙂 \ufffd \\x1b", "héllo 世界 🙂 \ufffd \\x1b", "héllo 世界 🙂 \ufffd \\x1b"},
	}
	for _, c := range cases {
		if got := Safe(c.in); got != c.safe {
			t.Errorf("Safe(%q) = %q, want %q", c.in, got, c.safe)
		}
		if got := SafeText(c.in); got != c.text {
			t.Errorf("SafeText(%q) = %q, want %q", c.in, got, c.text)
		}
	}
	for b := 0; b < 256; b++ {
		in := "x" + string([]byte{byte(b)}) + "y"
		for _, out := range []string{Safe(in), strings.NewReplacer("\n", "", "\t", "").Replace(SafeText(in))} {
			for _, r := range out {
				if r < 0x20 || r >= 0x7f && r < 0xa0 {
					t.Fatalf("byte %#x: %q still holds control %U", b, out, r)
				}
			}
		}
	}
}

// Errors quote remote output: for humans it is escaped, in the JSON
// envelope exact (encoding/json escapes it).
func TestPrintErrorEscapesForHumansOnly(t *testing.T) {
	err := WithHint(errors.New("prepare failed; output tail:\nok\r\x1b[31mforged"), "see \x1b]8;;http://x\x07")
	ios, _, _, errb := Test()
	PrintError(ios, err, false)
	want := "error: prepare failed; output tail:\nok\\r\\x1b[31mforged\nhint: see \\x1b]8;;http://x\\x07\n"
	if errb.String() != want {
		t.Errorf("human:\n got %q\nwant %q", errb.String(), want)
	}
	errb.Reset()
	PrintError(ios, err, true)
	want = `{"error":{"code":"error","message":"prepare failed; output tail:\nok\r\u001b[31mforged","hint":"see \u001b]8;;http://x\u0007"}}` + "\n"
	if errb.String() != want {
		t.Errorf("json:\n got %q\nwant %q", errb.String(), want)
	}
}
