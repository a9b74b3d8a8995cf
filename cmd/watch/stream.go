package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/tui"
)

// followWait bounds one wait for the journal to move, so an interrupt
// or an unreachable store is noticed in time.
const followWait = 5 * time.Second

// Line is one event of `watch --json` (docs/contract.md: epoch, seq, at, kind,
// host, task_id, phase, detail; name and type say which record and what
// happened). host and task_id come from the event's detail, else from
// the record it names; detail is the event's detail as journaled ({}
// when it has none).
type Line struct {
	Epoch  uint64          `json:"epoch"`
	Seq    uint64          `json:"seq"`
	At     time.Time       `json:"at"`
	Kind   state.Kind      `json:"kind"`
	Name   string          `json:"name"`
	Type   string          `json:"type"`
	Host   string          `json:"host"`
	TaskID string          `json:"task_id"`
	Phase  string          `json:"phase"`
	Detail json.RawMessage `json:"detail"`
}

// LineOf is an entry as --json prints it.
func LineOf(e state.Entry) Line {
	d := records.DetailOf(e)
	host, task := records.About(e, d)
	detail := e.Detail
	if len(detail) == 0 {
		detail = json.RawMessage("{}")
	}
	return Line{Epoch: e.Epoch, Seq: e.Seq, At: e.At.UTC(), Kind: e.Kind, Name: e.Name, Type: e.Type,
		Host: host, TaskID: task, Phase: d.Phase, Detail: detail}
}

// PlainLine is an entry as --no-tui prints it: time, seq=N, type,
// kind/name, then key=value fields, one event per line so grep and awk
// find what they look for.
func PlainLine(e state.Entry) string {
	d := records.DetailOf(e)
	host, task := records.About(e, d)
	var b strings.Builder
	fmt.Fprintf(&b, "%s seq=%d %s %s/%s", cmdutil.Timestamp(e.At), e.Seq, cmdutil.Safe(e.Type), e.Kind, e.Name)
	var fs []tui.Field
	if host != "" && !(e.Kind == records.KindHost && host == e.Name) {
		fs = append(fs, tui.Field{Key: "host", Value: host})
	}
	if task != "" && !((e.Kind == records.KindTask || e.Kind == records.KindJob) && task == e.Name) {
		fs = append(fs, tui.Field{Key: "task", Value: task})
	}
	fs = append(fs, tui.Fields(d, cmdutil.Timestamp)...)
	if len(fs) > 0 {
		b.WriteString(" " + tui.FormatFields(fs))
	}
	return b.String()
}

// stream prints the journal from o.Since (or from now) as it grows,
// until ctx ends, o.Stop says the awaited event came, or o.Done is closed
// and what the journal then holds is printed. It waits on the store's
// Follow, not a timer: the etcd store watches, the file store watches the
// journal file's size and time.
func stream(ctx context.Context, o *WatchOptions, st state.Store) error {
	_, cur, err := records.Head(ctx, st)
	if err != nil {
		return err
	}
	if o.Since >= 0 {
		if uint64(o.Since) > cur.Seq {
			fmt.Fprintf(o.IO.ErrOut, "watch: the journal ends at seq %d; waiting for seq %d\n", cur.Seq, o.Since+1)
		}
		cur.Seq = uint64(o.Since)
	}
	sc, placer := records.Scope{Host: o.Host, Task: o.Task}, records.NewPlacer(st)
	wctx, cancel := context.WithCancel(ctx) // waits end early once o.Done is closed
	defer cancel()
	if o.Done != nil {
		go func() {
			select {
			case <-o.Done:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	last := false // o.Done was closed: read to the journal's end, then stop
	for {
		var es []state.Entry
		var brk records.Break
		var gapAt uint64
		var err error
		if last {
			es, brk, gapAt, err = records.Next(ctx, st, cur)
		} else {
			es, brk, gapAt, err = records.Wait(wctx, st, cur, followWait)
			if err != nil && ctx.Err() == nil && wctx.Err() != nil {
				last = true
				continue
			}
		}
		if err != nil {
			return err
		}
		for _, e := range es {
			cur.Seq = e.Seq
			d := records.DetailOf(e)
			if tui.IsClaim(e) && !o.Claims || !placer.Keeps(ctx, sc, e, d) {
				continue
			}
			if err := o.print(e); err != nil {
				return err
			}
			if o.Stop != nil && o.Stop(e, d) {
				return nil
			}
		}
		switch brk {
		case records.NewEpoch:
			epoch, err := st.Epoch(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.IO.ErrOut, "watch: the journal was re-created (epoch %d): following it from its start\n", epoch)
			cur = records.Cursor{Epoch: epoch}
			continue
		case records.Gap:
			fmt.Fprintf(o.IO.ErrOut, "watch: the journal skips from seq %d to %d: those events are lost\n", cur.Seq, gapAt)
			cur.Seq = gapAt - 1
			continue
		}
		if last {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (o *WatchOptions) print(e state.Entry) error {
	var err error
	if o.JSON {
		err = writeLine(o.IO.Out, LineOf(e))
	} else {
		_, err = fmt.Fprintln(o.IO.Out, PlainLine(e))
	}
	if err != nil {
		return fmt.Errorf("writing event seq %d: %w", e.Seq, err)
	}
	return nil
}

// writeLine writes v as one compact JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// JournalEnd is the journal's current position: a command that starts
// something and then follows it passes this as Since, so it misses none
// of the events its start wrote.
func JournalEnd(ctx context.Context, st state.Store) (int64, error) {
	_, cur, err := records.Head(ctx, st)
	if err != nil {
		return 0, err
	}
	return int64(cur.Seq), nil
}

// Follow is --watch for another command (task archive, host drain): the
// view scoped to what it started on a terminal, which stays until the
// user quits; else the stream of its events until stop returns true for
// one or done is closed (nil for both: until interrupted). The scope is
// what the command resolved, followed even if it is gone since (a task a
// delete forgot).
func Follow(ctx context.Context, f *cmdutil.Factory, sc records.Scope, since int64, stop func(state.Entry, records.Detail) bool, done <-chan struct{}) error {
	o := NewOptions(f)
	o.Host, o.Task, o.Since, o.JSON = sc.Host, sc.Task, since, f.JSON()
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	if o.IO.IsStdoutTTY() && o.IO.CanPrompt() && !o.JSON {
		return view(ctx, o, ex)
	}
	o.Stop, o.Done = stop, done
	return stream(ctx, o, ex.Store())
}
