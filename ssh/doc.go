// Package ssh is kandev-exec's transport: it connects to a Target that
// package sshconfig resolved, hop by hop through its ProxyJump chain
// with deadlines (dial.go: hopConn is where a hop's connection comes
// from; proxycmd.go runs the first hop's ProxyCommand; deadline.go bounds
// a hop, standing still while a passphrase is typed), authenticates with
// ssh-agent or key files and user certificates (auth.go: every client
// credential; agent.go says why an agent offered nothing; unlock.go asks
// for passphrases), checks each hop's host key against its pin or its CA
// (hostkey.go: every host key check; hostcert.go: host certificates),
// keeps long-lived links alive (keepalive.go), runs commands (exec.go,
// eager.go, pty.go), forwards ports (forward.go), and classifies every
// failure (errors.go), so that each maps to one exit code.
package ssh
