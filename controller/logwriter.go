package controller

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// logWriter appends to controller.log and never fails its caller: a write
// that fails (the host's disk is full) is counted as lost bytes, and once
// writing works again one line says how many were lost and why, before
// the output that follows. Not safe for concurrent use: the server calls
// it under logMu. The totals are atomic, for status.
type logWriter struct {
	w       io.Writer
	lost    int64  // lost since the last notice
	reason  string // the first failure since the last notice
	midLine bool   // the last byte written was not a newline

	total      atomic.Int64           // lost over the session
	lastReason atomic.Pointer[string] // why bytes were last lost
}

func (l *logWriter) Write(p []byte) (int, error) {
	if l.lost > 0 && !l.notice() {
		l.lose(int64(len(p)), nil)
		return len(p), nil
	}
	n, err := l.w.Write(p)
	if n > 0 {
		l.midLine = p[n-1] != '\n'
	}
	if err != nil {
		l.lose(int64(len(p)-n), err)
	}
	return len(p), nil
}

// retryNotice writes the notice of lost bytes, if one is due, without
// waiting for more output to carry it.
func (l *logWriter) retryNotice() {
	if l.lost > 0 {
		l.notice()
	}
}

// notice writes "[controller] <time> N bytes lost: <reason>", on a line of
// its own, and reports whether it went out whole.
func (l *logWriter) notice() bool {
	line := fmt.Sprintf("[controller] %s %d bytes lost: %s\n", timestamp(), l.lost, l.reason)
	if l.midLine {
		line = "\n" + line
	}
	n, err := io.WriteString(l.w, line)
	if n > 0 {
		l.midLine = line[n-1] != '\n'
	}
	if err != nil {
		return false
	}
	l.lost, l.reason = 0, ""
	return true
}

func (l *logWriter) lose(n int64, err error) {
	if n <= 0 {
		return
	}
	if l.reason == "" && err != nil {
		reason := err.Error()
		l.reason = reason
		l.lastReason.Store(&reason)
	}
	l.lost += n
	l.total.Add(n)
}

// lostBytes is how many bytes never reached the log, and the last reason.
func (l *logWriter) lostBytes() (int64, string) {
	reason := ""
	if r := l.lastReason.Load(); r != nil {
		reason = *r
	}
	return l.total.Load(), reason
}

func timestamp() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00") }
