package profiles

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// envLines is an env mapping of n keys, K0..K(n-1), indented by indent.
func envLines(n int, indent string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sK%d: v\n", indent, i)
	}
	return b.String()
}

// TestDecodeRefusesOversizedFile: a profile or agent file over 1 MiB is
// a usage error naming file and limit, whatever it holds.
func TestDecodeRefusesOversizedFile(t *testing.T) {
	big := "name: big\nhost: prod\n# " + strings.Repeat("x", MaxFileSize) + "\n"
	decoders := map[string]func(string, []byte) error{
		"profile": func(f string, b []byte) error { _, err := DecodeProfile(f, b); return err },
		"agent":   func(f string, b []byte) error { _, err := DecodeAgent(f, b); return err },
	}
	for what, decode := range decoders {
		err := decode("big.yaml", []byte(big))
		var de *DecodeError
		if !errors.As(err, &de) || de.File != "big.yaml" || !strings.Contains(err.Error(), "larger than 1048576 bytes (1 MiB)") {
			t.Errorf("%s of %d bytes: %v", what, len(big), err)
		}
	}
	// Exactly at the limit is fine.
	head := "name: ok\nhost: prod\n# "
	atLimit := head + strings.Repeat("x", MaxFileSize-len(head)-1) + "\n"
	if _, err := DecodeProfile("ok.yaml", []byte(atLimit)); err != nil {
		t.Fatalf("a profile of exactly %d bytes: %v", len(atLimit), err)
	}
}

// TestDecodeRefusesTooManyEnvKeys: more than MaxEnvKeys env keys in one
// document (env and repository secrets counted together) is a usage
// error at the first key past the limit.
func TestDecodeRefusesTooManyEnvKeys(t *testing.T) {
	split := MaxEnvKeys - 10
	over := "name: p\nhost: prod\nenv:\n" + envLines(split, "  ") +
		"repositories:\n  - name: app\n    url: /srv/app.git\n    secrets:\n" + strings.ReplaceAll(envLines(11, "      "), "K", "S")
	_, err := DecodeProfile("p.yaml", []byte(over))
	var de *DecodeError
	wantLine := 3 + split + 4 + 11 // header, env, repository lines, then S0..S10
	if !errors.As(err, &de) || de.Line != wantLine || de.Key != "S10" || !strings.Contains(err.Error(), "more than 4096 env keys") {
		t.Fatalf("profile with %d keys: %v (line %d)", MaxEnvKeys+1, err, de.Line)
	}
	agent := "name: a\ncommand: [a]\nenv:\n" + envLines(MaxEnvKeys+1, "  ")
	if _, err := DecodeAgent("a.yaml", []byte(agent)); !errors.As(err, &de) || !strings.Contains(err.Error(), "a.yaml:") {
		t.Fatalf("agent with %d keys: %v", MaxEnvKeys+1, err)
	}
	atLimit := "name: p\nhost: prod\nenv:\n" + envLines(MaxEnvKeys, "  ")
	p, err := DecodeProfile("p.yaml", []byte(atLimit))
	if err != nil || len(p.Env) != MaxEnvKeys {
		t.Fatalf("profile with exactly %d keys: %v", MaxEnvKeys, err)
	}
}
