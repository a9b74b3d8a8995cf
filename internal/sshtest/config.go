package sshtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSSHDConfig writes the sshd_config for the current port and host keys and returns its path.
func (s *Server) writeSSHDConfig() (string, error) {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("ListenAddress 127.0.0.1:%d", s.port)
	for _, k := range s.hostKeys {
		line("HostKey %s", quote(k.path))
		if s.hostCA != nil {
			line("HostCertificate %s", quote(k.path+"-cert.pub"))
		}
	}
	if s.userCA != nil {
		line("TrustedUserCAKeys %s", quote(s.userCA.KeyPath+".pub"))
		line("AuthorizedKeysFile none")
	} else {
		line("AuthorizedKeysFile %s", quote(s.authorizedKeysPath()))
	}
	// The tempdir and key files are not laid out the way StrictModes demands.
	line("StrictModes no")
	line("PubkeyAuthentication yes")
	line("PasswordAuthentication no")
	line("KbdInteractiveAuthentication no")
	line("UsePAM no")
	line("PermitRootLogin yes") // CI runs tests as root.
	line("PidFile none")
	line("Subsystem sftp internal-sftp")
	// On by default: needed for ProxyJump through a bastion and for port forwards.
	line("AllowTcpForwarding %s", yesNo(s.tcpForwarding))
	line("DisableForwarding %s", yesNo(s.disableForwarding))
	line("LogLevel %s", s.logLevel)
	// Tests fan out many concurrent connections and sessions; the defaults (10:30:100, 10) drop them.
	line("MaxStartups 100:30:200")
	line("MaxSessions %d", s.maxSessions)
	// The login user's shell runs their startup files, and on the project's
	// machines those run `pyenv rehash`, which waits 60 s on a lock that a
	// shell killed mid-rehash (tests kill remote commands) leaves behind.
	// Bound that wait: it is the machine's, not what a test measures.
	if s.pathDir != "" {
		line("SetEnv PYENV_REHASH_TIMEOUT=1 PATH=%s", s.pathDir)
	} else {
		line("SetEnv PYENV_REHASH_TIMEOUT=1")
	}
	path := filepath.Join(s.dir, "sshd_config")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// HostEntry is one Host block of an OpenSSH client config written by WriteSSHConfig.
type HostEntry struct {
	Alias        string
	HostName     string // defaults to 127.0.0.1
	Port         int
	User         string
	IdentityFile string
	ProxyJump    string // alias of another entry, e.g. a bastion Server's entry
	// ProxyCommand reaches the server through a command, as ProxyNC and
	// ProxyW write one.
	ProxyCommand string
}

// ProxyNC is a ProxyCommand that reaches %h:%p with busybox nc.
const ProxyNC = "busybox nc %h %p"

// ProxyW is a ProxyCommand that reaches %h:%p with `ssh -W` through the
// entry bastion of the client config at configPath (an OpenSSH bastion).
func ProxyW(configPath, bastion string) string {
	return fmt.Sprintf("ssh -F %s -W %%h:%%p %s", quote(configPath), bastion)
}

// HostEntry returns an entry that logs in to s as User() with the fixture's user key.
// Set ProxyJump to reach s through a bastion (any Server, since AllowTcpForwarding is on).
func (s *Server) HostEntry(alias string) HostEntry {
	return HostEntry{Alias: alias, HostName: "127.0.0.1", Port: s.Port(), User: s.User(), IdentityFile: s.UserKeyPath}
}

// WriteSSHConfig writes an OpenSSH client config (for `ssh -F path`) with one Host block per entry.
// Host key checking is off only so baseline `ssh` commands in tests and benchmarks work; kandev-exec
// pins host keys itself and never reads these two lines.
func WriteSSHConfig(t testing.TB, path string, hosts ...HostEntry) {
	t.Helper()
	var b strings.Builder
	for _, h := range hosts {
		hostName := h.HostName
		if hostName == "" {
			hostName = "127.0.0.1"
		}
		fmt.Fprintf(&b, "Host %s\n", h.Alias)
		fmt.Fprintf(&b, "  HostName %s\n", hostName)
		fmt.Fprintf(&b, "  Port %d\n", h.Port)
		fmt.Fprintf(&b, "  User %s\n", h.User)
		if h.IdentityFile != "" {
			fmt.Fprintf(&b, "  IdentityFile %s\n", quote(h.IdentityFile))
		}
		fmt.Fprintf(&b, "  IdentitiesOnly yes\n")
		if h.ProxyJump != "" {
			fmt.Fprintf(&b, "  ProxyJump %s\n", h.ProxyJump)
		}
		if h.ProxyCommand != "" {
			fmt.Fprintf(&b, "  ProxyCommand %s\n", h.ProxyCommand)
		}
		fmt.Fprintf(&b, "  UserKnownHostsFile /dev/null\n")
		fmt.Fprintf(&b, "  StrictHostKeyChecking no\n")
		// Never prompt (a test has no tty to answer), and keep "Permanently added" warnings out of output.
		fmt.Fprintf(&b, "  BatchMode yes\n")
		fmt.Fprintf(&b, "  LogLevel ERROR\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatalf("sshtest: write ssh config: %v", err)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// quote protects paths with spaces; both sshd_config and ssh_config accept double quotes.
func quote(path string) string { return `"` + path + `"` }
