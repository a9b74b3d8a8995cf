package controller

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A log answer ends with the session's status as it ended, so `session
// logs` needs no second request (over SSH, a second channel) for it.
func TestLogsAnswerEndsWithStatus(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "echo done; exit 4"))
	want := waitState(t, s, StateExited)
	ctx := ctxFor(t, 10*time.Second)
	for _, follow := range []bool{false, true} {
		var log bytes.Buffer
		pos, end, err := s.c.LogsThenStatus(ctx, LogPos{}, follow, &log, nil)
		if err != nil || end == nil {
			t.Fatalf("follow %v: status %v, %v", follow, end, err)
		}
		if !reflect.DeepEqual(*end, want) {
			t.Fatalf("follow %v: the log answer's status %+v, Status said %+v", follow, *end, want)
		}
		if pos.Offset != end.LogBytes || !strings.Contains(log.String(), "done\n") {
			t.Fatalf("follow %v: read %d bytes, the status counts %d:\n%s", follow, pos.Offset, end.LogBytes, log.String())
		}
	}

	running := start(t, newRequest(t, "echo up; exec sleep 30"))
	waitState(t, running, StateRunning)
	_, end, err := running.c.LogsThenStatus(ctx, LogPos{}, false, &bytes.Buffer{}, nil)
	if err != nil || end == nil || end.State != StateRunning || end.AgentPID == 0 {
		t.Fatalf("a running agent's log answer ended with %+v, %v", end, err)
	}
}

// The trailer carries no byte a header line may not hold, and a status
// too large for it is left out (the reader then asks for it).
func TestStatusTrailerEncoding(t *testing.T) {
	st := Status{SessionID: "sess-1", State: StateExited, Error: "odd \x7f\r\n bytes", LogBytes: 42}
	v, ok := statusTrailer(st)
	if !ok || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r >= 0x7f }) {
		t.Fatalf("trailer %q (ok %v) holds bytes a header line may not", v, ok)
	}
	if got, ok := parseStatusTrailer(v); !ok || !reflect.DeepEqual(got, st) {
		t.Fatalf("parsed back %+v (ok %v), want %+v", got, ok, st)
	}
	for _, bad := range []string{"", "not base64!", "bm90IGpzb24="} {
		if _, ok := parseStatusTrailer(bad); ok {
			t.Fatalf("trailer %q parsed as a status", bad)
		}
	}
	for i := range 500 {
		st.EndedProcesses = append(st.EndedProcesses, Process{PID: 10000 + i, Name: "worker-process"})
	}
	if v, ok := statusTrailer(st); ok {
		t.Fatalf("a %d-byte trailer was kept, over the %d allowed", len(v), maxStatusTrailer)
	}
}
