// Package ssh is kandev-exec's transport: it connects to a Target that
// package sshconfig resolved, hop by hop through its ProxyJump chain
// with deadlines (dial.go: hopConn is where a hop's connection comes
// from; proxycmd.go runs the first hop's ProxyCommand), authenticates with ssh-agent or key files (auth.go: every
// client credential), checks each hop's host key against its pin
// (hostkey.go: every host key check), keeps long-lived links alive
// (keepalive.go), runs commands (exec.go, eager.go, pty.go), forwards
// ports (forward.go), and classifies every failure (errors.go), so that
// each maps to one exit code.
package ssh
