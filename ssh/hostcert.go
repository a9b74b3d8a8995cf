package ssh

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// CertInfo describes a host certificate a hop presented: the pin of an
// Observed is always its certified key's, which `ssh-keygen -lf` prints
// for the host key file and which a renewed certificate keeps.
type CertInfo struct {
	Fingerprint   string     `json:"fingerprint"`    // of the certificate itself
	CAFingerprint string     `json:"ca_fingerprint"` // of the key that signed it
	KeyID         string     `json:"key_id"`
	Serial        uint64     `json:"serial"`
	Principals    []string   `json:"principals"`
	ValidAfter    *time.Time `json:"valid_after"`  // nil: always
	ValidBefore   *time.Time `json:"valid_before"` // nil: forever
}

func certInfo(c *xssh.Certificate) *CertInfo {
	i := &CertInfo{Fingerprint: xssh.FingerprintSHA256(c), CAFingerprint: xssh.FingerprintSHA256(c.SignatureKey),
		KeyID: c.KeyId, Serial: c.Serial, Principals: append([]string{}, c.ValidPrincipals...)}
	if c.ValidAfter != 0 {
		t := time.Unix(int64(c.ValidAfter), 0).UTC()
		i.ValidAfter = &t
	}
	if c.ValidBefore != xssh.CertTimeInfinity {
		t := time.Unix(int64(c.ValidBefore), 0).UTC()
		i.ValidBefore = &t
	}
	return i
}

// HostCertError: a hop trusted through a CA presented no certificate the
// CA vouches for, for the reason named (exit 5).
type HostCertError struct {
	CA     string
	Reason string
}

func (e *HostCertError) Error() string {
	return fmt.Sprintf("host certificate not trusted (CA %s): %s", e.CA, e.Reason)
}

// checkHostCert is OpenSSH's check of a host certificate, against the one
// CA trusted for hop: a host certificate signed by that CA, valid now,
// whose principals (wildcards allowed) name hop, with no critical options,
// neither it nor its CA revoked.
func checkHostCert(key xssh.PublicKey, ca string, hop *sshconfig.Target, now time.Time) error {
	fail := func(format string, a ...any) error { return &HostCertError{CA: ca, Reason: fmt.Sprintf(format, a...)} }
	cert, ok := key.(*xssh.Certificate)
	switch {
	case !ok:
		return fail("the host presented a plain %s key, not a certificate", key.Type())
	case cert.CertType != xssh.HostCert:
		return fail("the certificate is a user certificate, not a host certificate")
	case xssh.FingerprintSHA256(cert.SignatureKey) != ca:
		return fail("the certificate is signed by another CA, %s", xssh.FingerprintSHA256(cert.SignatureKey))
	}
	info := certInfo(cert)
	switch {
	case info.ValidAfter != nil && now.Before(*info.ValidAfter):
		return fail("the certificate is not valid yet: from %s", info.ValidAfter.Format(time.RFC3339))
	case info.ValidBefore != nil && !now.Before(*info.ValidBefore):
		return fail("the certificate expired at %s", info.ValidBefore.Format(time.RFC3339))
	case len(cert.CriticalOptions) > 0:
		return fail("the certificate has critical options, which a host certificate must not")
	}
	name, principal := hop.KeyName(), ""
	for _, p := range cert.ValidPrincipals {
		if sshconfig.MatchPattern(name, p) {
			principal = p
			break
		}
	}
	if principal == "" {
		return fail("the certificate is for %s, not %s", strings.Join(cert.ValidPrincipals, ", "), name)
	}
	if what, err := revoked(hop.RevokedHostKeys, cert); err != nil || what != "" {
		if err != nil {
			return fail("%v", err)
		}
		return fail("%s is revoked by %s", what, hop.RevokedHostKeys)
	}
	checker := xssh.CertChecker{Clock: func() time.Time { return now }}
	if err := checker.CheckCert(principal, cert); err != nil {
		return fail("%v", strings.TrimPrefix(err.Error(), "ssh: "))
	}
	return nil
}

// krlMagic opens a key revocation list, OpenSSH's binary form.
const krlMagic = "SSHKRL\n\x00"

// revoked says which of the certificate, its key or its CA the file of
// revoked keys lists ("" when none is): one public key per line, as
// RevokedHostKeys takes them. A KRL is not read, so it refuses every
// certificate rather than letting a revoked one through.
func revoked(path string, cert *xssh.Certificate) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
		return "", nil // as OpenSSH: a missing file revokes nothing
	case err != nil:
		return "", fmt.Errorf("RevokedHostKeys %s: %v", path, err)
	case bytes.HasPrefix(b, []byte(krlMagic)):
		return "", fmt.Errorf("RevokedHostKeys %s is a key revocation list (KRL), which kandev-exec does not read: list the revoked keys one per line instead", path)
	}
	listed := map[string]bool{}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if k := parsePublicKey(l); k != nil {
			listed[keyBytes(k)] = true
		}
	}
	for what, k := range map[string]xssh.PublicKey{"the certificate": cert, "the certified key": cert.Key, "its CA": cert.SignatureKey} {
		if listed[keyBytes(k)] {
			return what, nil
		}
	}
	return "", nil
}
