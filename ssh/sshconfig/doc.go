// Package sshconfig says what OpenSSH's client configuration makes of a
// host. Resolve turns a name or alias, with the settings given on the
// command line, into a Target: the endpoint and every hop of its
// ProxyJump chain, each with its own user, port, identities and agent. A
// configuration it cannot honour is a *ConfigError naming file and line.
// It asks `ssh -G` when an OpenSSH client is installed, and otherwise
// reads the files itself as that client would. It never connects:
// package ssh dials the Target.
//
// resolve.go turns one lookup into a Target and follows the chain;
// sshg.go asks `ssh -G`; parse.go is the built-in parser, with lex.go,
// include.go, match.go and finish.go (what ssh does once the files are
// read); tokens.go expands %-tokens and reads values as OpenSSH does;
// jump.go reads ProxyJump entries; lookupcache.go keeps answers within
// and between commands, and digest.go says when a kept one is current. Reading a ProxyCommand and expanding
// its tokens belongs here too; running it is package ssh's.
package sshconfig
