package ssh

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

var localhostCert = sshtest.Cert{Principals: []string{"127.0.0.1"}}

// A host certificate is seen, shown and pinned as its certified key (what
// `ssh-keygen -lf` prints for the host key), so a renewed certificate of
// the same key is no key change; a pin of the certificate's own
// fingerprint still matches, flagged for migration.
func TestHostCertificateIsItsKey(t *testing.T) {
	ca := sshtest.NewCA(t)
	s := sshtest.NewServer(t, sshtest.WithHostCertificate(ca, localhostCert))
	tg := targetFor(t, s)
	c, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	o, cert := c.Observed[0], s.HostCertificate(sshtest.KeyEd25519)
	if o.Pin != PinOf(s.HostKeys()[0]) || o.Cert == nil || o.Cert.CAFingerprint != ca.Fingerprint() ||
		o.Cert.Fingerprint != xssh.FingerprintSHA256(cert) || o.Cert.Principals[0] != "127.0.0.1" {
		t.Fatalf("observed %+v (certificate %+v)", o, o.Cert)
	}
	keyFile := filepath.Join(t.TempDir(), "host.pub")
	if err := os.WriteFile(keyFile, xssh.MarshalAuthorizedKey(s.HostKeys()[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-lf", keyFile).Output(); err != nil || !strings.Contains(string(out), " "+o.Fingerprint+" ") {
		t.Fatalf("ssh-keygen -lf prints %q (%v), the dial shows %s", out, err, o.Fingerprint)
	}

	s.RecertifyHost(localhostCert)
	pins := Pins{tg.Addr(): o.Pin}
	if c, err = Dial(context.Background(), tg, DialOptions{Mode: Enforce, Pins: pins}); err != nil {
		t.Fatalf("a renewed certificate of the pinned key: %v", err)
	}
	c.Close()

	renewed := s.HostCertificate(sshtest.KeyEd25519)
	legacy := Pins{tg.Addr(): PinOf(renewed)}
	c, err = Dial(context.Background(), tg, DialOptions{Mode: Enforce, Pins: legacy})
	if err != nil {
		t.Fatalf("a pin of the certificate itself: %v", err)
	}
	c.Close()
	if o := c.Observed[0]; !o.CertPinned || o.Pin != PinOf(s.HostKeys()[0]) {
		t.Fatalf("the certificate's own pin must be flagged for migration to the key: %+v", o)
	}
}

// Trust through a CA: any key it certified for the host's name, valid
// now; every other certificate is a host key failure naming why.
func TestHostCertificateTrustedThroughCA(t *testing.T) {
	ca, other := sshtest.NewCA(t), sshtest.NewCA(t)
	s := sshtest.NewServer(t, sshtest.WithHostCertificate(ca, localhostCert))
	plain := sshtest.NewServer(t)
	tg := targetFor(t, s)
	dial := func(tg *sshconfig.Target, caFP string) error {
		c, err := Dial(context.Background(), tg, DialOptions{Mode: Enforce, CAs: CAs{tg.Addr(): caFP}})
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(tg, ca.Fingerprint()); err != nil {
		t.Fatal(err)
	}
	wantRefused := func(t *testing.T, err error, reason string) {
		t.Helper()
		var e *Error
		var hc *HostCertError
		if !errors.As(err, &e) || e.Class != ClassHostKey || !errors.As(err, &hc) || !strings.Contains(hc.Reason, reason) {
			t.Fatalf("want a host key failure saying %q, got %v", reason, err)
		}
	}
	wantRefused(t, dial(tg, other.Fingerprint()), "signed by another CA, "+ca.Fingerprint())
	wantRefused(t, dial(targetFor(t, plain), ca.Fingerprint()), "presents no host certificate")

	for _, c := range []struct {
		cert   sshtest.Cert
		reason string
	}{
		{sshtest.Cert{Principals: []string{"127.0.0.1"}, Validity: "-2d:-1d"}, "the certificate expired at "},
		{sshtest.Cert{Principals: []string{"127.0.0.1"}, Validity: "+1d:+2d"}, "the certificate is not valid yet: from "},
		{sshtest.Cert{Principals: []string{"db.example", "10.0.0.*"}}, "the certificate is for db.example, 10.0.0.*, not 127.0.0.1"},
	} {
		s.RecertifyHost(c.cert)
		wantRefused(t, dial(tg, ca.Fingerprint()), c.reason)
	}

	s.RecertifyHost(sshtest.Cert{Principals: []string{"127.0.0.*"}})
	if err := dial(tg, ca.Fingerprint()); err != nil {
		t.Fatalf("a wildcard principal: %v", err)
	}
	s.RecertifyHost(sshtest.Cert{Principals: []string{"box.example"}})
	aliased := *tg
	aliased.HostKeyAlias = "box.example"
	if err := dial(&aliased, ca.Fingerprint()); err != nil {
		t.Fatalf("a certificate for the HostKeyAlias: %v", err)
	}

	dir := t.TempDir()
	list := filepath.Join(dir, "revoked")
	if err := os.WriteFile(list, append([]byte("# retired\n"), xssh.MarshalAuthorizedKey(s.HostKeys()[0])...), 0o600); err != nil {
		t.Fatal(err)
	}
	aliased.RevokedHostKeys = list
	wantRefused(t, dial(&aliased, ca.Fingerprint()), "the certified key is revoked by "+list)
	krl := filepath.Join(dir, "krl")
	pub := filepath.Join(dir, "host.pub")
	if err := os.WriteFile(pub, xssh.MarshalAuthorizedKey(s.HostKeys()[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-k", "-f", krl, pub).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -k: %v: %s", err, out)
	}
	aliased.RevokedHostKeys = krl
	wantRefused(t, dial(&aliased, ca.Fingerprint()), "is a key revocation list (KRL), which kandev-exec does not read")
}
