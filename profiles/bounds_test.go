package profiles

import (
	"errors"
	"testing"
	"time"
)

// max_runtime and idle_timeout: durations between 1s and MaxBound; a bad
// one is named with its line.
func TestDecodeBounds(t *testing.T) {
	p, err := DecodeProfile("p.yaml", []byte("name: p\nhost: h\nprepare_script: x\nmax_runtime: 2h\nidle_timeout: 90s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := ParseBound(p.MaxRuntime); d != 2*time.Hour {
		t.Fatalf("max_runtime %q", p.MaxRuntime)
	}
	if d, _ := ParseBound(p.IdleTimeout); d != 90*time.Second {
		t.Fatalf("idle_timeout %q", p.IdleTimeout)
	}
	for _, bad := range []string{"max_runtime: soon", "max_runtime: 500ms", "idle_timeout: 9000h", "idle_timeout: -1m"} {
		_, err := DecodeProfile("p.yaml", []byte("name: p\nhost: h\nprepare_script: x\n"+bad+"\n"))
		var de *DecodeError
		if err == nil || !errors.As(err, &de) || de.Line != 4 {
			t.Errorf("%s: %v, want an error on line 4", bad, err)
		}
	}
	if d, err := ParseBound(""); d != 0 || err != nil {
		t.Fatalf(`ParseBound(""): %s %v, want no bound`, d, err)
	}
}
