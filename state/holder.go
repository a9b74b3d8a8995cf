package state

import (
	"errors"
	"os"
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
		Command: truncate(strings.Join(os.Args, " "), maxCommandLen),
		Host:    host,
		BootID:  strings.TrimSpace(string(boot)),
	}
})

func currentHolder(now time.Time) Holder {
	h := self()
	h.Since = now
	return h
}

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
