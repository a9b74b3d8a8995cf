package cmd

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	xssh "golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// cmdServer is `server KIND NAME [ssh_config line...]`: start another
// server for this transcript and add a Host NAME block for it to the ssh
// config (with any extra lines given), logging in with target's user key.
// It sets NAME_PORT, NAME_FP and NAME_FPRE as setup does for the others.
// KIND is dropbear (Dropbear, only an ed25519 host key), dropbearnoforward
// (the same started with -j -k: no port forwarding), hostcert (OpenSSH
// presenting a certificate from the transcript's CA for 127.0.0.1, whose
// own fingerprint is NAME_CERTFP, NAME_CERTFPRE as a regexp) or
// usercert (OpenSSH taking only certificates from that CA: target's key
// is refused, NAME_KEY is a key with its certificate beside it, and
// NAME_CERT that certificate), noforward (OpenSSH with AllowTcpForwarding
// no), forwardingdisabled (DisableForwarding yes) or busybox (OpenSSH
// whose sessions' PATH holds only busybox applets). The CA's fingerprint is CA_FP (CA_FPRE as
// a regexp); CA2_FP is another CA's.
func (fx *fixture) cmdServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: server KIND NAME [ssh_config line...]")
	}
	kind, name := args[0], args[1]
	up := strings.ToUpper(name)
	var s *sshtest.Server
	switch kind {
	case "dropbear":
		s = sshtest.NewDropbear(fx.t)
	case "dropbearnoforward":
		s = sshtest.NewDropbear(fx.t, sshtest.WithoutTCPForwarding())
	case "hostcert":
		s = sshtest.NewServer(fx.t, sshtest.WithHostCertificate(fx.certAuthority(ts), sshtest.Cert{Principals: []string{"127.0.0.1"}}))
		setCertFP(ts, name, s)
	case "noforward":
		s = sshtest.NewServer(fx.t, sshtest.WithoutTCPForwarding())
	case "busybox":
		s = sshtest.NewServer(fx.t, sshtest.WithBusyboxPath())
	case "forwardingdisabled":
		s = sshtest.NewServer(fx.t, sshtest.WithForwardingDisabled())
	case "usercert":
		s = sshtest.NewServer(fx.t, sshtest.WithTrustedUserCA(fx.certAuthority(ts)))
		ts.Setenv(up+"_KEY", s.UserKeyPath)
		ts.Setenv(up+"_CERT", s.UserCertPath)
	default:
		ts.Fatalf("unknown server kind %q", kind)
	}
	fx.servers[name] = s
	t := fx.servers["target"]
	s.AuthorizeKey(t.UserPublicKey)
	var b strings.Builder
	fmt.Fprintf(&b, "Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n",
		name, s.Port(), s.User(), t.UserKeyPath)
	for _, l := range args[2:] {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	appendConfig(ts, b.String())
	ts.Setenv(up+"_PORT", strconv.Itoa(s.Port()))
	ts.Setenv(up+"_FP", negotiated(s))
	ts.Setenv(up+"_FPRE", regexp.QuoteMeta(negotiated(s)))
}

// certAuthority is the transcript's CA, made on first use with another
// one beside it that certifies nothing here.
func (fx *fixture) certAuthority(ts *testscript.TestScript) *sshtest.CA {
	if fx.ca == nil {
		fx.ca = sshtest.NewCA(fx.t)
		ts.Setenv("CA_FP", fx.ca.Fingerprint())
		ts.Setenv("CA_FPRE", regexp.QuoteMeta(fx.ca.Fingerprint()))
		ts.Setenv("CA2_FP", sshtest.NewCA(fx.t).Fingerprint())
	}
	return fx.ca
}

// cmdRecertify is `recertify NAME VALIDITY PRINCIPAL,...`: the server
// restarts presenting new certificates of the same host keys, valid for
// VALIDITY (ssh-keygen -V; "always" for no limit) and naming PRINCIPALs.
func (fx *fixture) cmdRecertify(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 || fx.servers[args[0]] == nil {
		ts.Fatalf("usage: recertify NAME VALIDITY PRINCIPAL,...")
	}
	validity := args[1]
	if validity == "always" {
		validity = ""
	}
	s := fx.servers[args[0]]
	s.RecertifyHost(sshtest.Cert{Principals: strings.Split(args[2], ","), Validity: validity})
	setCertFP(ts, args[0], s)
}

// setCertFP sets NAME_CERTFP (and NAME_CERTFPRE, as a regexp): the own
// fingerprint of the certificate s presents for its ed25519 key.
func setCertFP(ts *testscript.TestScript, name string, s *sshtest.Server) {
	fp := xssh.FingerprintSHA256(s.HostCertificate(sshtest.KeyEd25519))
	ts.Setenv(strings.ToUpper(name)+"_CERTFP", fp)
	ts.Setenv(strings.ToUpper(name)+"_CERTFPRE", regexp.QuoteMeta(fp))
}

// appendConfig adds text to the transcript's ssh config. A Host block
// added after `Host *` still applies: that block sets nothing it sets.
func appendConfig(ts *testscript.TestScript, text string) {
	f, err := os.OpenFile(ts.Getenv("KANDEV_EXEC_SSH_CONFIG"), os.O_APPEND|os.O_WRONLY, 0)
	ts.Check(err)
	_, err = f.WriteString(text)
	ts.Check(err)
	ts.Check(f.Close())
}
