package ssh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// resolveIn resolves alias from the ssh config the entries make.
func resolveIn(t *testing.T, alias string, entries ...sshtest.HostEntry) *sshconfig.Target {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	sshtest.WriteSSHConfig(t, cfg, entries...)
	tg, err := sshconfig.Resolve(context.Background(), alias, sshconfig.Overrides{}, sshconfig.ResolveOptions{ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	return tg
}

// gone says whether pid has been reaped (or is a zombie its parent has
// yet to reap: nothing runs).
func gone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// The ProxyCommand runs under the user's shell with exec, its stdin and
// stdout carry the connection, and closing the connection ends it and
// every process of its group.
func TestProxyCommandCarriesTheConnection(t *testing.T) {
	s := sshtest.NewServer(t)
	dir := t.TempDir()
	shell := filepath.Join(dir, "shell")
	if err := os.WriteFile(shell, []byte("#!/bin/sh\necho \"$@\" > "+dir+"/shell-ran\nexec /bin/sh \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SHELL", shell)
	e := s.HostEntry("via-nc")
	e.ProxyCommand = fmt.Sprintf("sh -c 'sleep 600 & echo $! > %s/child; echo $$ > %s/proxy; exec %s'", dir, dir, sshtest.ProxyNC)
	tg := resolveIn(t, "via-nc", e)
	c, err := Dial(context.Background(), tg, DialOptions{Mode: Enforce, Pins: Pins{tg.Addr(): PinOf(s.HostKeys()[0])}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, err := c.Run(context.Background(), "echo hi", nil); err != nil || string(out) != "hi\n" {
		t.Fatalf("run: %q %v", out, err)
	}
	ran, err := os.ReadFile(filepath.Join(dir, "shell-ran"))
	if err != nil || !strings.HasPrefix(string(ran), "-c exec sh -c ") {
		t.Fatalf("the user's shell ran %q (%v), want -c exec COMMAND", ran, err)
	}
	proxy, child := readPid(t, filepath.Join(dir, "proxy")), readPid(t, filepath.Join(dir, "child"))
	if gone(proxy) || gone(child) {
		t.Fatal("the ProxyCommand is not running while the connection is up")
	}
	c.Close()
	if !gone(proxy) {
		t.Error("the ProxyCommand outlived the connection")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !gone(child) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the kill is sent; init reaps the orphan in its own time
	}
	if !gone(child) {
		t.Error("a process of the ProxyCommand's group outlived the connection")
	}
}

// A ProxyCommand that fails is a network failure showing what it printed.
func TestProxyCommandFailureShowsStderr(t *testing.T) {
	s := sshtest.NewServer(t)
	closed := s.Port()
	s.Stop()
	e := s.HostEntry("down")
	e.ProxyCommand = "sh -c 'echo connecting >&2; exec busybox nc 127.0.0.1 " + strconv.Itoa(closed) + "'"
	tg := resolveIn(t, "down", e)
	_, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Host: "box"})
	var de *Error
	var pe *ProxyCommandError
	if !errors.As(err, &de) || de.Class != ClassNetwork || !errors.As(err, &pe) {
		t.Fatalf("want a ProxyCommand failure (network), got %v", err)
	}
	if pe.Status != "exit status 1" || !strings.Contains(err.Error(), "it printed: connecting") || !strings.Contains(err.Error(), "nc: can't connect") {
		t.Errorf("message %q (status %q)", err, pe.Status)
	}
	if !strings.Contains(de.Hint, "ProxyCommand") || !strings.Contains(de.Hint, "ssh -v down true") {
		t.Errorf("hint %q", de.Hint)
	}
}

// A ProxyCommand that never connects is bounded by the connect timeout,
// then stopped.
func TestProxyCommandBoundedByConnectTimeout(t *testing.T) {
	s := sshtest.NewServer(t)
	dir := t.TempDir()
	e := s.HostEntry("stuck")
	e.ProxyCommand = "sh -c 'echo $$ > " + dir + "/pid; echo waiting >&2; exec sleep 600'"
	tg := resolveIn(t, "stuck", e)
	_, err := Dial(context.Background(), tg, DialOptions{Mode: Record, Timeout: 300 * time.Millisecond})
	var de *Error
	var pe *ProxyCommandError
	if !errors.As(err, &de) || de.Class != ClassTimeout || !errors.As(err, &pe) {
		t.Fatalf("want a ProxyCommand timeout, got %v", err)
	}
	if !strings.Contains(err.Error(), "timed out after 300ms") || !strings.Contains(err.Error(), "it printed: waiting") {
		t.Errorf("message %q", err)
	}
	if pid := readPid(t, filepath.Join(dir, "pid")); !gone(pid) {
		t.Error("the ProxyCommand outlived the failed dial")
	}
}

// ssh -W through a bastion as the ProxyCommand; and a jump host of a
// ProxyJump chain reached through its own ProxyCommand.
func TestProxyCommandSSHWAndJumpHost(t *testing.T) {
	bastion, target := sshtest.NewServer(t), sshtest.NewServer(t)
	bastion.AuthorizeKey(target.UserPublicKey)
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	b, w, jumped := bastion.HostEntry("bastion"), target.HostEntry("w"), target.HostEntry("jumped")
	b.IdentityFile = target.UserKeyPath
	w.ProxyCommand = sshtest.ProxyW(cfg, "bastion")
	b.ProxyCommand, jumped.ProxyJump = sshtest.ProxyNC, "bastion"
	sshtest.WriteSSHConfig(t, cfg, b, w, jumped)
	t.Setenv("SSH_AUTH_SOCK", "")
	for alias, hops := range map[string]int{"w": 1, "jumped": 2} {
		tg, err := sshconfig.Resolve(context.Background(), alias, sshconfig.Overrides{}, sshconfig.ResolveOptions{ConfigFile: cfg})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Dial(context.Background(), tg, DialOptions{Mode: Record})
		if err != nil {
			t.Fatalf("%s: %v", alias, err)
		}
		out, _, err := c.Run(context.Background(), "echo hi", nil)
		c.Close()
		if err != nil || string(out) != "hi\n" || len(c.Observed) != hops {
			t.Fatalf("%s: %q %v, observed %+v", alias, out, err, c.Observed)
		}
		if got := c.Observed[len(c.Observed)-1].Pin; got != PinOf(target.HostKeys()[0]) {
			t.Errorf("%s: target presented %v", alias, got)
		}
	}
}
