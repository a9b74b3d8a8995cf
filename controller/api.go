package controller

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kdlbs/kandev-exec/internal/ascii"
	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/loophttp"
)

// Health is the controller's proof of identity for a nonce. The proof
// covers every field, because recovery records the pid and start time
// from this reply: whatever relays it cannot swap in another process.
type Health struct {
	SessionID string `json:"session_id"`
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	Proof     string `json:"proof"` // hex HMAC-SHA256(token, "health:"+nonce+":"+session_id+":"+pid+":"+start_time)
}

// Receipt proves that the controller was sealed and its agent stopped for a
// claim. It is stored in receipts/<claim_id>.json.
type Receipt struct {
	ClaimID   string    `json:"claim_id"`
	SessionID string    `json:"session_id"`
	State     string    `json:"state"`
	ExitCode  *int      `json:"exit_code"`
	Killed    bool      `json:"killed,omitempty"` // the stop had to SIGKILL the agent's process group after the grace
	DrainedAt time.Time `json:"drained_at"`
	// Proof is hex HMAC-SHA256(token, "receipt:"+claim_id+":"+session_id+":"+state),
	// with ":killed" appended when killed (so a receipt without it
	// verifies as before).
	Proof string `json:"proof"`
}

// VerifyReceipt reports whether r was issued by a controller holding token.
func VerifyReceipt(token string, r Receipt) bool {
	return hmac.Equal([]byte(receiptProof(token, r.ClaimID, r.SessionID, r.State, r.Killed)), []byte(r.Proof))
}

func healthProof(token, nonce string, h Health) string {
	return mac(token, fmt.Sprintf("health:%s:%s:%d:%d", nonce, h.SessionID, h.PID, h.StartTime))
}

func receiptProof(token, claimID, sessionID, state string, killed bool) string {
	msg := "receipt:" + claimID + ":" + sessionID + ":" + state
	if killed {
		msg += ":killed"
	}
	return mac(token, msg)
}

func mac(key, msg string) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(msg))
	return hex.EncodeToString(h.Sum(nil))
}

// claimIDPattern keeps a claim id a safe file name.
var claimIDPattern = ascii.Word{First: ascii.Alnum, Rest: ascii.Alnum + "._-", Max: 128}

const (
	logPoll  = 200 * time.Millisecond // how often a follower looks for new log bytes
	maxNonce = 256
	// maxDrainGrace bounds the grace a drain may ask for: a drain is
	// bounded by its caller's budget, never by the agent.
	maxDrainGrace = time.Minute
)

// routes are the API's paths, each with its method.
var routes = map[string]string{"/v1/health": "GET", "/v1/status": "GET", "/v1/logs": "GET", "/v1/stop": "POST", "/v1/drain": "POST"}

// handle answers one API request. Health proves the token without
// receiving it, so a client never hands its token to whatever now listens
// on a recorded port; status and stop take a signed request instead of
// the token (signed.go); every other route wants the token.
func (s *server) handle(w *loophttp.Response, r *loophttp.Request) {
	nonce := s.signedNonce(r)
	if r.Path != "/v1/health" && nonce == "" && subtle.ConstantTimeCompare([]byte(r.Header["authorization"]), []byte("Bearer "+s.req.Token)) != 1 {
		w.Error(loophttp.StatusUnauthorized, "missing or wrong bearer token")
		return
	}
	want, ok := routes[r.Path]
	switch {
	case !ok:
		w.Error(loophttp.StatusNotFound, "no such route: "+r.Path)
		return
	case r.Method != want:
		w.SetHeader("Allow", want)
		w.Error(loophttp.StatusMethodNotAllowed, fmt.Sprintf("%s wants %s", r.Path, want))
		return
	}
	switch r.Path {
	case "/v1/health":
		s.handleHealth(w, r)
	case "/v1/status":
		s.answer(w, nonce, s.status())
	case "/v1/logs":
		s.handleLogs(w, r, nonce)
	case "/v1/stop":
		s.answer(w, nonce, s.stop(s.grace))
	case "/v1/drain":
		s.handleDrain(w, r)
	}
}

func (s *server) handleHealth(w *loophttp.Response, r *loophttp.Request) {
	nonce := r.Query.Get("nonce")
	if nonce == "" || len(nonce) > maxNonce {
		w.Error(loophttp.StatusBadRequest, "nonce is required (at most 256 bytes)")
		return
	}
	h := Health{SessionID: s.req.SessionID, PID: s.pid, StartTime: s.startTime}
	h.Proof = healthProof(s.req.Token, nonce, h)
	w.JSON(loophttp.StatusOK, h)
}

// handleLogs sends the log from offset; with follow=1 it keeps sending until
// the agent has exited and everything written up to then is sent. The
// answer holds one generation of the log (X-Log-Generation): a follower
// whose log is rotated under it ends with trailers naming where the rest
// is (X-Log-Next-Generation, X-Log-Next-Offset). With generation=G, a
// log that is no longer G is refused (409), never read as if it were.
// A negative offset -N starts N bytes before the end (at 0 in a shorter
// log), so that a tail needs no status first; a controller from before
// it refuses it (400). The head says where the answer starts and how
// long the log was then (X-Log-Start, X-Log-Size): what a follower has
// to tell the lines already there from new ones.
// A signed request's answer proves itself in its head (signed.go).
func (s *server) handleLogs(w *loophttp.Response, r *loophttp.Request, nonce string) {
	q := r.Query
	offset, err := strconv.ParseInt(q.Get("offset"), 10, 64)
	if q.Get("offset") == "" {
		offset, err = 0, nil
	}
	if err != nil {
		w.Error(loophttp.StatusBadRequest, "offset must be an integer (negative: bytes before the end)")
		return
	}
	f, gen, err := s.openLog()
	if err != nil {
		w.Error(loophttp.StatusInternalServerError, err.Error())
		return
	}
	defer f.Close()
	if want := q.Get("generation"); want != "" && want != gen {
		w.JSON(loophttp.StatusConflict, logRefusal{Error: fmt.Sprintf("the log is generation %s, not %s: it was rotated or replaced since", gen, want), Generation: gen})
		return
	}
	fi, err := f.Stat()
	if err != nil || offset > fi.Size() {
		w.JSON(loophttp.StatusRangeNotSatisfiable, logRefusal{Error: "offset is beyond the end of the log", Generation: gen})
		return
	}
	if offset < 0 {
		offset = max(fi.Size()+offset, 0) // no overflow: the size is not negative
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		w.Error(loophttp.StatusInternalServerError, err.Error())
		return
	}
	w.SetHeader("Content-Type", "application/octet-stream")
	w.SetHeader(headerGeneration, gen)
	w.SetHeader(headerStart, strconv.FormatInt(offset, 10))
	w.SetHeader(headerSize, strconv.FormatInt(fi.Size(), 10))
	if nonce != "" {
		w.SetHeader(headerProof, logHeadProof(s.req.Token, nonce, gen, requestTarget(r)))
	}
	w.Stream(loophttp.StatusOK, trailerNextGeneration+", "+trailerNextOffset+", "+trailerStatus+", "+trailerSkippedBytes)
	// The status as the answer ends, so that a reader need not ask for it
	// again: a stream ends its connection, and another costs a channel.
	defer func() {
		if v, ok := statusTrailer(s.status()); ok {
			w.SetTrailer(trailerStatus, v)
		}
	}()
	send := func() bool { return copyFlushed(w, f) }
	follow, finished := q.Get("follow") == "1", false
	for {
		if !send() || !follow {
			return
		}
		if next, at, skipped, ok := s.rotatedFrom(gen); ok {
			// Nothing more is written to this generation: send its
			// last bytes, then say where the rest is, and what the
			// follower cannot have any more.
			if send() {
				w.SetTrailer(trailerNextGeneration, next)
				w.SetTrailer(trailerNextOffset, strconv.FormatInt(at, 10))
				w.SetTrailer(trailerSkippedBytes, strconv.FormatInt(skipped, 10))
			}
			return
		}
		if finished {
			return
		}
		select {
		case <-w.Gone():
			return
		case <-s.exited:
			finished = true // one more pass picks up the final lines
		case <-time.After(logPoll):
		}
	}
}

// The headers of a log answer.
const (
	headerGeneration      = "X-Log-Generation"
	headerStart           = "X-Log-Start"
	headerSize            = "X-Log-Size"
	trailerNextGeneration = "X-Log-Next-Generation"
	trailerNextOffset     = "X-Log-Next-Offset"
	trailerStatus         = "X-Session-Status" // base64 of the status JSON
	trailerSkippedBytes   = "X-Log-Skipped-Bytes"
)

// maxStatusTrailer keeps the status trailer well inside what a reader
// takes for trailers (loophttp.MaxHeaderBytes); a status larger than it
// (many ended processes) is left out, and the reader asks for it.
const maxStatusTrailer = 4 << 10

// statusTrailer encodes st for the status trailer: base64, because a
// header line carries no control bytes and JSON may hold DEL.
func statusTrailer(st Status) (string, bool) {
	b, err := json.Marshal(st)
	if err != nil {
		return "", false
	}
	v := base64.StdEncoding.EncodeToString(b)
	return v, len(v) <= maxStatusTrailer
}

// parseStatusTrailer reads the status trailer; false when there is none
// (a controller from before it) or it does not parse.
func parseStatusTrailer(v string) (Status, bool) {
	var st Status
	b, err := base64.StdEncoding.DecodeString(v)
	if v == "" || err != nil || json.Unmarshal(b, &st) != nil {
		return Status{}, false
	}
	return st, true
}

// logRefusal is a log request's error, with the log's generation.
type logRefusal struct {
	Error      string `json:"error"`
	Generation string `json:"generation"`
}

// copyFlushed sends f from where it is to its end, each piece at once;
// false when the client is gone.
func copyFlushed(w io.Writer, f *os.File) bool {
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return false
			}
		}
		if err != nil {
			return true
		}
	}
}

// openLog opens the log with its generation: rotation renames under
// logMu, so the two match.
func (s *server) openLog() (*os.File, string, error) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	f, err := os.Open(filepath.Join(s.dir, logFile))
	return f, s.logGen, err
}

// rotatedFrom says where a follower of generation gen goes on, once gen
// was rotated: the offset in the next generation its end was carried to,
// or 0 of the current one when more rotations followed; skipped counts
// the bytes between, which the follower never gets: what the
// generations in between had beyond what each carried on.
func (s *server) rotatedFrom(gen string) (next string, at, skipped int64, ok bool) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	r, ok := s.rotations[gen]
	if !ok {
		return "", 0, 0, false
	}
	if r.next == s.logGen {
		return r.next, r.carried, 0, true
	}
	for prev := r; prev.next != s.logGen; {
		between, known := s.rotations[prev.next]
		if !known {
			break // every generation but the current one was rotated: never
		}
		skipped += between.size - prev.carried
		if between.next == s.logGen {
			skipped -= between.carried // the current generation starts with them
		}
		prev = between
	}
	return s.logGen, 0, max(skipped, 0), true
}

// handleDrain seals the controller, stops the agent and issues a receipt
// for the claim. The same claim id gets the same receipt back. The work
// completes even if the caller goes away, so a retry finds the receipt.
// grace, when given, is how long the agent has after SIGTERM: the
// caller's bound, so an agent that ignores SIGTERM is killed within it.
func (s *server) handleDrain(w *loophttp.Response, r *loophttp.Request) {
	q := r.Query
	claim := q.Get("claim_id")
	if !claimIDPattern.MatchString(claim) {
		w.Error(loophttp.StatusBadRequest, "claim_id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
		return
	}
	grace := s.grace
	if g := q.Get("grace"); g != "" {
		d, err := time.ParseDuration(g)
		if err != nil || d <= 0 || d > maxDrainGrace {
			w.Error(loophttp.StatusBadRequest, fmt.Sprintf("grace must be a duration above 0 and at most %s, got %q", maxDrainGrace, g))
			return
		}
		grace = d
	}
	rec, err := s.drain(claim, grace)
	if err != nil {
		w.Error(loophttp.StatusInternalServerError, err.Error())
		return
	}
	w.JSON(loophttp.StatusOK, rec)
}

func (s *server) drain(claim string, grace time.Duration) (Receipt, error) {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	dir := filepath.Join(s.dir, receiptsDir)
	var rec Receipt
	if b, err := fsx.ReadFile(filepath.Join(dir, claim+".json")); err == nil {
		return rec, json.Unmarshal(b, &rec)
	} else if !errors.Is(err, os.ErrNotExist) {
		return rec, err
	}
	s.mu.Lock()
	sealed := s.st.Sealed
	s.st.Sealed = true
	err := s.writeStatusLocked()
	s.mu.Unlock()
	if err != nil {
		return rec, err
	}
	if !sealed {
		s.event("sealed for claim %s", claim)
	}
	st := s.stop(grace)
	if st.State != StateStopped && st.State != StateExited {
		return rec, errors.New("agent still running after stop: no receipt")
	}
	s.mu.Lock()
	killed := s.killed
	s.mu.Unlock()
	rec = Receipt{ClaimID: claim, SessionID: s.req.SessionID, State: st.State, ExitCode: st.ExitCode, Killed: killed,
		DrainedAt: time.Now().UTC(), Proof: receiptProof(s.req.Token, claim, s.req.SessionID, st.State, killed)}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return rec, err
	}
	if err := writeJSONAtomic(dir, claim+".json", rec); err != nil {
		return rec, err
	}
	s.event("drained for claim %s: agent %s", claim, st.State)
	return rec, nil
}
