package cmd

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// cmdServer is `server KIND NAME [ssh_config line...]`: start another
// server for this transcript and add a Host NAME block for it to the ssh
// config (with any extra lines given), logging in with target's user key.
// It sets NAME_PORT, NAME_FP and NAME_FPRE as setup does for the others.
// KIND is dropbear (Dropbear, only an ed25519 host key).
func (fx *fixture) cmdServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: server KIND NAME [ssh_config line...]")
	}
	kind, name := args[0], args[1]
	var s *sshtest.Server
	switch kind {
	case "dropbear":
		s = sshtest.NewDropbear(fx.t)
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
	up := strings.ToUpper(name)
	ts.Setenv(up+"_PORT", strconv.Itoa(s.Port()))
	ts.Setenv(up+"_FP", negotiated(s))
	ts.Setenv(up+"_FPRE", regexp.QuoteMeta(negotiated(s)))
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
