package ssh

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// agentState is the ssh-agent one dial asked for its keys, and what came
// of it, so that a failure can name a dead socket or a locked agent.
type agentState struct {
	source  string // "SSH_AUTH_SOCK" or "IdentityAgent"; "" when there is none to ask
	sock    string
	err     error // the socket did not answer, or the agent did not list its keys
	signers []xssh.Signer
	conn    net.Conn
}

// openAgent connects to the agent named by IdentityAgent (or
// SSH_AUTH_SOCK). No agent is not an error: key files may suffice.
func openAgent(identityAgent string) agentState {
	a := agentState{source: "IdentityAgent", sock: identityAgent}
	switch identityAgent {
	case "none":
		return agentState{source: "IdentityAgent", sock: "none"}
	case "", "SSH_AUTH_SOCK":
		a.source, a.sock = "SSH_AUTH_SOCK", os.Getenv("SSH_AUTH_SOCK")
	default:
		a.sock = os.ExpandEnv(a.sock)
		if strings.HasPrefix(a.sock, "~/") {
			home, _ := os.UserHomeDir()
			a.sock = filepath.Join(home, a.sock[2:])
		}
	}
	if a.sock == "" {
		return a
	}
	conn, err := net.DialTimeout("unix", a.sock, 2*time.Second)
	if err != nil {
		a.err = err
		return a
	}
	if a.signers, err = agent.NewClient(conn).Signers(); err != nil {
		conn.Close()
		a.err = err
		return a
	}
	a.conn = conn
	return a
}

func (a agentState) close() {
	if a.conn != nil {
		a.conn.Close()
	}
}

// describe says why the agent offered no key, for an error that needs
// one; notHeld is what to say when the agent answered without it.
func (a agentState) describe(notHeld string) string {
	switch {
	case a.sock == "none":
		return "IdentityAgent is none"
	case a.sock == "":
		return "no ssh-agent is running (SSH_AUTH_SOCK is not set)"
	case a.err != nil:
		return fmt.Sprintf("%s names %s, where no ssh-agent answers (%v)", a.source, a.sock, a.err)
	case len(a.signers) == 0:
		// A locked agent lists no keys, as an empty one does.
		return fmt.Sprintf("the ssh-agent at %s lists no keys: it is locked (`ssh-add -X` unlocks it) or empty", a.sock)
	}
	return notHeld
}

// unusable says the agent was meant to answer and could not.
func (a agentState) unusable() bool {
	return a.sock != "none" && a.sock != "" && (a.err != nil || len(a.signers) == 0)
}
