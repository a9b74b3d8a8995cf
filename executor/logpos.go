package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/records"
)

// FollowReconnectFactor bounds how long `session logs -f` reconnects
// after its link is lost: this many keepalive deadlines.
const FollowReconnectFactor = 2

// followBackoff bounds the wait between two reconnects.
const followBackoff = 10 * time.Second

// LogPositionError: a read of the log from a position that no longer
// exists: its generation was rotated or replaced since, or the offset is
// past the end (exit 10).
type LogPositionError struct {
	SessionID  string
	Want, Have string // the generations asked for and found
	Offset     int64  // past the end when Want == Have or Want is ""
}

func (e *LogPositionError) Error() string {
	if e.Want != "" && e.Want != e.Have {
		return fmt.Sprintf("session %s: the log is generation %s now, not %s: it was rotated or replaced since, so the rest of %s is gone", e.SessionID, e.Have, e.Want, e.Want)
	}
	return fmt.Sprintf("session %s: offset %d is past the end of the log (generation %s): it was truncated, or no read reached that byte", e.SessionID, e.Offset, e.Have)
}

func isLogRefusal(err error) bool {
	var ge *controller.GenerationError
	var oe *controller.OffsetError
	return errors.As(err, &ge) || errors.As(err, &oe)
}

// logRefused names the session in the controller's refusal of a position.
func logRefused(sessionID string, err error) error {
	var ge *controller.GenerationError
	var oe *controller.OffsetError
	switch {
	case errors.As(err, &ge):
		return &LogPositionError{SessionID: sessionID, Want: ge.Want, Have: ge.Have}
	case errors.As(err, &oe):
		return &LogPositionError{SessionID: sessionID, Have: oe.Generation, Offset: oe.Offset}
	}
	return err
}

// hostLog copies the session's log file from pos to w, read on the host
// once its controller is gone (or cannot be asked), and returns where it
// reached.
func (e *Executor) hostLog(ctx context.Context, a *attach, pos controller.LogPos, w io.Writer) (controller.LogPos, error) {
	logPath := path.Join(a.s.SessionDir, "controller.log")
	var meta bytes.Buffer
	// The size on a line, then the generation file (JSON over lines).
	probe := fmt.Sprintf("wc -c < %s 2>/dev/null || echo 0; cat -- %s 2>/dev/null",
		shquote.Quote(logPath), shquote.Quote(controller.GenerationFile(a.s.SessionDir)))
	if err := a.hc.c.Stream(ctx, probe, nil, &meta, io.Discard); err != nil {
		return pos, err
	}
	sizeLine, genJSON, _ := strings.Cut(meta.String(), "\n")
	size, _ := strconv.ParseInt(strings.TrimSpace(sizeLine), 10, 64)
	gen, _ := controller.DecodeGeneration([]byte(genJSON)) // "": a controller older than generations
	if pos.Generation != "" && gen != "" && gen != pos.Generation {
		return pos, &LogPositionError{SessionID: a.s.ID, Want: pos.Generation, Have: gen}
	}
	if pos.Offset > size {
		return pos, &LogPositionError{SessionID: a.s.ID, Have: gen, Offset: pos.Offset}
	}
	pos.Generation = gen
	cw := &countWriter{w: w}
	tail := fmt.Sprintf("tail -c +%d -- %s 2>/dev/null || true", pos.Offset+1, shquote.Quote(logPath))
	err := a.hc.c.Stream(ctx, tail, nil, cw, io.Discard)
	pos.Offset += cw.n
	return pos, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// followLogs follows the session's log; a link lost on the way is made
// again, with backoff, for FollowReconnectFactor keepalive deadlines,
// going on from the byte reached. Past that the first loss is the error.
func (e *Executor) followLogs(ctx context.Context, s *records.Session, o LogOptions, w io.Writer) (*records.Session, error) {
	var pos controller.LogPos
	known := false
	reached := o.Reached
	o.Reached = func(g string, off int64) {
		pos, known = controller.LogPos{Generation: g, Offset: off}, true
		if reached != nil {
			reached(g, off)
		}
	}
	notice := func(format string, a ...any) {
		if o.Notice != nil {
			o.Notice(fmt.Sprintf(format, a...))
		}
	}
	var first error
	var giveUp time.Time
	wait := 500 * time.Millisecond
	for {
		var attached func()
		if first != nil {
			at := o.Offset
			attached = func() { notice("session %s: reconnected to %s; going on from byte %d", s.ID, s.Host, at) }
		}
		out, made, err := e.logsOnce(ctx, s, o, w, giveUp, attached)
		var pe *LogPositionError
		switch {
		case err == nil, ctx.Err() != nil:
			return out, err
		case first != nil && errors.As(err, &pe) && pe.Want != pe.Have:
			// Rotated while the link was down: go on with what is there.
			notice("session %s: the log was rotated while the link was down (generation %s, now %s): going on from the start of %s; output in between may be missing",
				s.ID, pe.Want, pe.Have, pe.Have)
			o.FromOffset, o.Offset, o.Generation = true, 0, ""
			continue
		case first == nil && !made, !linkDown(err):
			// A host never reached is not a link lost.
			return out, err
		}
		now := time.Now()
		if first == nil {
			first, giveUp = err, now.Add(FollowReconnectFactor*e.cfg.KeepaliveDeadline)
			notice("session %s: %s; reconnecting for up to %s", s.ID, firstLine(err), giveUp.Sub(now).Round(time.Second))
		}
		if !now.Before(giveUp) {
			return nil, first
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(wait, giveUp.Sub(now))):
		}
		wait = min(wait*2, followBackoff)
		if known {
			o.FromOffset, o.Offset, o.Generation = true, pos.Offset, pos.Generation
		}
	}
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
