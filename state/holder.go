package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

const maxCommandLen = 256

// self describes this process; it is computed once because none of it
// changes while we run.
var self = sync.OnceValue(func() Holder {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id") // Linux only; "" elsewhere
	return Holder{
		PID:     os.Getpid(),
		Command: truncate(commandName(os.Args), maxCommandLen),
		Host:    host,
		BootID:  strings.TrimSpace(string(boot)),
	}
})

// commandName is the program and its subcommand words ("kandev-exec task
// launch"), never flags or arguments: those may carry values (--env
// K=V) that must not end up in lock notes, records or error messages.
func commandName(args []string) string {
	if len(args) == 0 {
		return ""
	}
	words := []string{filepath.Base(args[0])}
	for _, a := range args[1:] {
		if len(words) == 3 || strings.HasPrefix(a, "-") || strings.ContainsAny(a, "=/ ") {
			break
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

func currentHolder(now time.Time) Holder {
	h := self()
	h.Since = now
	return h
}

// Self describes this process as a Holder (now as Since), for records
// that note which process is working on them.
func Self() Holder { return currentHolder(time.Now().UTC()) }

// ProvablyGone reports whether h cannot be running any more, judged from
// this process (same machine and boot, pid gone).
func ProvablyGone(h Holder) bool { return provablyGone(h, self()) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// provablyGone reports whether h cannot be running any more, judged from
// process me. Only same-machine facts count: a holder on another host (or
// one we cannot tell apart) stays alive until its claim expires.
func provablyGone(h, me Holder) bool {
	if h.Host != me.Host {
		return false
	}
	if h.BootID != "" && me.BootID != "" && h.BootID != me.BootID {
		return true // the machine rebooted since h took it
	}
	if h.BootID != me.BootID || h.PID <= 0 {
		return false
	}
	// EPERM means the pid exists under another user: alive.
	return errors.Is(syscall.Kill(h.PID, 0), syscall.ESRCH)
}
