package sshconfig

import (
	"context"
	"testing"
	"time"
)

const controlConfig = `Host auto
    ControlMaster auto
    ControlPath ~/.ssh/cm-%C
    ControlPersist 10m
Host forever
    ControlMaster yes
    ControlPath /tmp/cm-%r@%h:%p
    ControlPersist yes
Host zero
    ControlMaster autoask
    ControlPath /tmp/cm-%C
    ControlPersist 0
Host nopath
    ControlMaster auto
    ControlPersist 60
Host nonepath
    ControlMaster auto
    ControlPath none
    ControlPersist 60
Host nopersist
    ControlMaster auto
    ControlPath /tmp/cm-%C
Host off
    ControlMaster no
    ControlPath /tmp/cm-%C
    ControlPersist 60
`

// Reuse is on only with a ControlMaster that shares, a ControlPath and a
// ControlPersist, read the same from `ssh -G` (which prints "controlmaster
// false" and "controlpersist no" when unset, and seconds for a time) and
// from the parser.
func TestControlSettings(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "config", controlConfig)
	want := map[string]struct {
		reuse   bool
		persist time.Duration
	}{
		"auto": {true, 10 * time.Minute}, "forever": {true, 0}, "zero": {true, 0},
		"nopath": {}, "nonepath": {}, "nopersist": {}, "off": {}, "unset": {},
	}
	for name, w := range want {
		for _, bin := range []string{"", "-"} {
			tg, err := Resolve(context.Background(), name, Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: bin})
			if err != nil {
				t.Fatalf("%s (binary %q): %v", name, bin, err)
			}
			if tg.Reuse != w.reuse || tg.ControlPersist != w.persist {
				t.Errorf("%s (binary %q): reuse %v persist %s, want %v %s", name, bin, tg.Reuse, tg.ControlPersist, w.reuse, w.persist)
			}
		}
	}
}

// A ControlMaster or ControlPersist value ssh refuses is refused by the
// parser too, naming the keyword.
func TestControlSettingsRefused(t *testing.T) {
	for _, body := range []string{"Host x\n ControlMaster sometimes\n", "Host x\n ControlPersist 5q\n"} {
		cfg := writeFile(t, t.TempDir(), "config", body)
		for _, bin := range []string{"", "-"} {
			if _, err := Resolve(context.Background(), "x", Overrides{}, ResolveOptions{ConfigFile: cfg, SSHBinary: bin}); err == nil {
				t.Errorf("%q (binary %q) accepted", body, bin)
			}
		}
	}
}
