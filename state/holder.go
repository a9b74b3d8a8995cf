package state

import (
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/procstat"
)

// self describes this process; it is computed once because none of it
// changes while we run.
var self = sync.OnceValue(func() Holder {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id") // Linux only; "" elsewhere
	start, _ := procstat.Start(os.Getpid())                   // Linux only; 0 elsewhere
	return Holder{
		PID:     os.Getpid(),
		Start:   start,
		Command: fsx.CommandName(os.Args),
		Host:    host,
		BootID:  strings.TrimSpace(string(boot)),
	}
})

// SelfAt describes this process as a Holder since now.
func SelfAt(now time.Time) Holder {
	h := self()
	h.Since = now
	return h
}

// Self describes this process as a Holder (now as Since), for records
// that note which process is working on them.
func Self() Holder { return SelfAt(time.Now().UTC()) }

// ProvablyGone reports whether h cannot be running any more, judged from
// this process (same machine and boot, pid gone).
func ProvablyGone(h Holder) bool { return provablyGone(h, self()) }

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
	if errors.Is(syscall.Kill(h.PID, 0), syscall.ESRCH) {
		return true
	}
	// A process that took the pid since started later (same boot, so
	// the start times compare).
	start, ok := procstat.Start(h.PID)
	return h.Start != 0 && ok && start != h.Start
}
