package controller

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
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

// spanned records the span open was told, and that it came before any
// of the log was written.
type spanned struct {
	opened bool
	sp     LogSpan
	out    strings.Builder
}

func (s *spanned) open(sp LogSpan) io.Writer {
	if s.opened || s.out.Len() != 0 {
		panic("open called twice, or after a write")
	}
	s.opened, s.sp = true, sp
	return &s.out
}

// A negative offset asks for the log's last bytes, and every answer says
// where it starts and the log's length then: a tail or a follow in one
// signed request, with its status, not a status first.
func TestSignedLogsSpan(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "seq 1 1000"))
	waitState(t, s, StateExited)
	log := readLog(t, s)
	size := int64(len(log))
	c, count := countingClient(s)
	for _, tc := range []struct {
		offset int64
		follow bool
		start  int64
	}{
		{-10, false, size - 10},
		{-size, false, 0},
		{-size - 1, false, 0},
		{-1 << 62, true, 0},
		{0, true, 0},
		{7, false, 7},
		{size, true, size},
	} {
		var got spanned
		pos, st, err := c.LogsSpanSigned(ctxFor(t, 10*time.Second), LogPos{Offset: tc.offset}, tc.follow, got.open, nil)
		if err != nil || st == nil || st.State != StateExited {
			t.Fatalf("offset %d, follow %v: %+v %v", tc.offset, tc.follow, st, err)
		}
		if want := (LogSpan{Start: tc.start, Size: size}); got.sp != want || got.out.String() != log[tc.start:] || pos.Offset != size || pos.Generation == "" {
			t.Fatalf("offset %d, follow %v: span %+v (want %+v), pos %+v, wrote %q", tc.offset, tc.follow, got.sp, want, pos, got.out.String())
		}
		if n := count(); n != 1 {
			t.Fatalf("offset %d, follow %v: %d requests, want 1", tc.offset, tc.follow, n)
		}
	}
	// Past the end is still refused.
	var oe *OffsetError
	if _, err := s.c.Logs(ctxFor(t, 10*time.Second), size+1, false, io.Discard); !errors.As(err, &oe) {
		t.Fatalf("logs past the end: %v, want *OffsetError", err)
	}
}

// A controller from before spans refuses a negative offset, and answers
// any other without a span: either is ErrUnproved with nothing written
// (the caller asks as before), though its head is proved.
func TestSignedLogsSpanOlderController(t *testing.T) {
	t.Parallel()
	const token = "s3cr3t"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As handleLogs did before spans.
		if off, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64); err != nil || off < 0 {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"offset must be a non-negative integer"}`)
			return
		}
		w.Header().Set(headerGeneration, "1")
		w.Header().Set(headerProof, logHeadProof(token, r.Header.Get(headerNonce), "1", r.URL.RequestURI()))
		io.WriteString(w, "old log\n")
	}))
	t.Cleanup(srv.Close)
	c := NewClient(nil, srv.Listener.Addr().(*net.TCPAddr).Port, token)
	for _, offset := range []int64{-10, 0} {
		var got spanned
		if _, _, err := c.LogsSpanSigned(ctxFor(t, 10*time.Second), LogPos{Offset: offset}, true, got.open, nil); !errors.Is(err, ErrUnproved) || got.opened {
			t.Fatalf("offset %d from an older controller: %v, opened %v; want ErrUnproved, not opened", offset, err, got.opened)
		}
	}
	// Its plain answer is still taken.
	var out strings.Builder
	if _, _, err := c.LogsThenStatusSigned(ctxFor(t, 10*time.Second), LogPos{}, false, &out, nil); err != nil || out.String() != "old log\n" {
		t.Fatalf("plain signed logs from an older controller: %v %q", err, out.String())
	}
}
