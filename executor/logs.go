package executor

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/logview"
)

// LogOptions shape what `session logs` shows. Agent output carries no
// time of its own: internal/logview says what Since and Timestamps can
// mean in such a log.
type LogOptions struct {
	Follow     bool
	Tail       int           // only the last N lines; 0 = all
	Since      time.Duration // hide lines proven older than this; 0 = none
	Timestamps bool          // prefix each line with its time, or "-" when unknown
	// FromOffset reads from byte Offset of the log (no tail); with a
	// Generation, only that generation of it (GenerationError otherwise).
	FromOffset bool
	Offset     int64
	Generation string
	// Reached is told where the printed log reached, when it is known.
	Reached func(generation string, offset int64)
	// Reconnect: a follow whose link is lost connects again (see
	// followLogs), telling Notice.
	Reconnect bool
	Notice    func(msg string)
	// Skipped is told when a follower fell more than a rotation behind
	// and output was lost (Notice says so too).
	Skipped func(LogSkip)
}

// LogSkip is what a follower lost to rotation.
type LogSkip = controller.Skip

// noticeSkip is the notice of a skip, as `tail -F` says "file truncated".
func noticeSkip(sessionID string, sk LogSkip) string {
	lost := fmt.Sprintf("%d bytes of output", sk.Bytes)
	if sk.Bytes < 0 {
		lost = "output its controller (older than this build) does not count"
	}
	return fmt.Sprintf("session %s: the log was rotated past this follower: %d generation(s) between %s and %s, %s, were not shown; going on at the start of %s",
		sessionID, sk.Generations, sk.From, sk.To, lost, sk.To)
}

// wantsSize says whether view needs the log's length: a tail reads from
// near its end, and a follow tells the lines already there from new ones.
func (o LogOptions) wantsSize() bool { return o.Follow || o.Tail > 0 && o.Since == 0 }

// tailBack is how far before the log's end a tail alone starts reading.
const tailBack = logview.MaxHeld + 1

// ask is the offset view starts at, for a controller that counts it
// from the end when negative: then the log's length comes with the log.
func (o LogOptions) ask() int64 {
	switch {
	case o.FromOffset:
		return o.Offset
	case o.Tail > 0 && o.Since == 0:
		return -tailBack
	}
	return 0
}

// view returns the offset to read the log from and the writer that
// shapes it; size is the log's length when asked (-1: unknown). With a
// tail alone, reading starts just over logview.MaxHeld before the end:
// the view would hold no more than that anyway, and a long log is not
// copied over the link for nothing.
func (o LogOptions) view(w io.Writer, size int64) (int64, *logview.Writer) {
	vo := logview.Options{Tail: o.Tail, Timestamps: o.Timestamps, Backlog: math.MaxInt64}
	if o.Since > 0 {
		vo.Since = time.Now().Add(-o.Since)
	}
	var start int64
	switch {
	case o.FromOffset:
		start = o.Offset
	case o.Tail > 0 && o.Since == 0 && size > tailBack:
		// From the byte before: if it ends a line, skipping the fragment
		// up to it loses nothing.
		start, vo.Partial = size-tailBack, true
	}
	if o.Follow && size >= 0 {
		vo.Backlog = max(size-start, 0)
	}
	return start, logview.New(w, vo)
}
