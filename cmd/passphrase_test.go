package cmd

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// On a terminal, a passphrase-protected key that no agent holds is asked
// for as ssh asks: on the terminal, never echoed, once for the whole
// command however often it dials (trust dials twice here: to look, then
// once per key type until the named key answers).
func TestPassphraseAskedOnATerminal(t *testing.T) {
	srv := sshtest.NewServer(t, sshtest.WithHostKeyTypes(sshtest.KeyEd25519, sshtest.KeyRSA))
	locked, pub := srv.NewUserKey(t, "s3cret")
	srv.AuthorizeKey(pub)
	rig := joinRig(t, buildCLI(t), srv)
	rig.ok("host", "add", "lk", "--hostname", "127.0.0.1", "--port", strconv.Itoa(srv.Port()), "--user", srv.User(),
		"--identity-file", locked, "--identities-only")

	p := newPTY(t, 24, 100)
	p.start(rig, nil, "host", "trust", "lk", "--fingerprint", srv.Fingerprint(sshtest.KeyRSA))
	p.waitOutput(regexp.QuoteMeta("Enter passphrase for key '" + locked + "': "))
	p.typeLine("s3cret")
	p.ends(0)
	p.waitOutput(`Pinned lk \(127\.0\.0\.1:[0-9]+\): ssh-rsa `)
	if out := p.out.String(); strings.Contains(out, "s3cret") || strings.Count(out, "Enter passphrase") != 1 {
		t.Fatalf("the passphrase must be asked once and never shown:\n%q", out)
	}
}
