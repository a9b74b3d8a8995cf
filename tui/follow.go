package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// The view reads the store only from commands, which bubbletea runs in
// their own goroutines: Update never waits on a disk or a network. One
// read is in flight at a time (the next is scheduled when its result
// arrives), so results never arrive out of order; each carries the
// generation it was started in, and a result from before a re-read, or
// of a follow called off (readNow), is dropped.

// Store is what the view reads: state.Store satisfies it. The view never
// writes, and no call holds the store's lock (reads take none).
type Store interface {
	records.Getter
	records.JournalReader
	List(ctx context.Context, kind state.Kind) ([]state.Record, error)
}

// readTimeout bounds one read of the store (an etcd store may hang).
const readTimeout = 10 * time.Second

// followWait bounds one wait for the journal to move: within the read's
// own timeout, so the records it names are still read in time.
const followWait = readTimeout / 2

// maxChanges is how many changed records one follow re-reads one by one;
// past it a full re-read is cheaper.
const maxChanges = 2000

// loadedMsg is a full re-read: every watched record and the journal.
type loadedMsg struct {
	gen    uint64
	read   uint64 // its number among the reads
	why    string
	world  *world
	cursor records.Cursor
	tail   []state.Entry // the journal's last entries, for the events pane
	// kindErrs: kinds whose records could not be listed (one unreadable
	// record fails a whole List); those rows are missing, and said so.
	kindErrs   []error
	journalErr error // the journal could not be read: poll in full instead
	at         time.Time
	took       time.Duration // how long the read took, by the wall clock
}

// followedMsg is what the journal added after a cursor, with the records
// those entries name read afresh.
type followedMsg struct {
	gen     uint64
	read    uint64
	from    records.Cursor
	entries []state.Entry
	changes []change
	brk     records.Break
	gapAt   uint64
	tooMany bool // too many records changed to read one by one
	err     error
	at      time.Time
	took    time.Duration // reading, not waiting for news
}

// change is one record as read after the entry that named it: v is nil
// when it is gone, err set when it cannot be read.
type change struct {
	kind state.Kind
	name string
	v    any
	err  error
}

func load(ctx context.Context, st Store, tailLen int, since int64) loadedMsg {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var m loadedMsg
	// The journal first: records listed after it are at least as new as
	// its last entry, and anything written since is re-read by the next
	// follow.
	es, cur, err := records.Head(ctx, st)
	if err != nil {
		m.journalErr = err
	}
	m.cursor, m.tail = cur, tail(es, tailLen, since)
	w := newWorld()
	a := newAffected()
	for _, k := range watchedKinds {
		recs, err := st.List(ctx, k)
		if err != nil {
			m.kindErrs = append(m.kindErrs, fmt.Errorf("%s records: %w", k, err))
			continue
		}
		for _, r := range recs {
			v, err := decode(k, r.Data)
			if err != nil {
				m.kindErrs = append(m.kindErrs, fmt.Errorf("%s %s: %w", k, r.Name, err))
				continue
			}
			w.set(k, r.Name, v, a)
		}
	}
	w.order()
	m.world = w
	return m
}

// tail keeps the entries after since (all of them when since < 0), at
// most the last n.
func tail(es []state.Entry, n int, since int64) []state.Entry {
	if since >= 0 {
		i := 0
		for i < len(es) && int64(es[i].Seq) <= since {
			i++
		}
		es = es[i:]
	}
	if len(es) > n {
		es = es[len(es)-n:]
	}
	return es
}

// follow reads what the journal added after from, waiting for news first
// when wait is set, and the records its entries name.
func follow(ctx context.Context, st Store, from records.Cursor, wait bool) (m followedMsg) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	m.from = from
	start := time.Now()
	defer func() { m.took = time.Since(start) }()
	if _, waits := st.(records.Follower); wait && waits {
		m.entries, m.brk, m.gapAt, m.err = records.Wait(ctx, st, from, followWait)
		start = time.Now() // a quiet journal is not a slow store
	} else {
		m.entries, m.brk, m.gapAt, m.err = records.Next(ctx, st, from)
	}
	if m.err != nil || m.brk != records.Contiguous {
		return m
	}
	type key struct {
		kind state.Kind
		name string
	}
	seen := map[key]bool{}
	var keys []key
	for _, e := range m.entries {
		k := key{e.Kind, e.Name}
		if watched(e.Kind) && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if len(keys) > maxChanges {
		m.tooMany = true
		return m
	}
	for _, k := range keys {
		c := change{kind: k.kind, name: k.name}
		r, err := st.Get(ctx, k.kind, k.name)
		var corrupt *state.CorruptRecordError
		switch {
		case errors.Is(err, state.ErrNotFound):
		case errors.As(err, &corrupt):
			c.err = err
		case err != nil:
			m.err = err
			return m
		default:
			if c.v, err = decode(k.kind, r.Data); err != nil {
				c.err = fmt.Errorf("%s %s: %w", k.kind, k.name, err)
			}
		}
		m.changes = append(m.changes, c)
	}
	return m
}

func (m *Model) loadCmd(why string) tea.Cmd {
	m.gen++
	m.reads++
	m.reading, m.cancelRead = true, nil
	gen, read, st, ctx, n, since, now := m.gen, m.reads, m.opts.Store, m.ctx, ringCap, m.since, m.opts.Now
	m.since = -1 // only the first load replays from --since
	return func() tea.Msg {
		start := time.Now()
		msg := loadedMsg{gen: gen, why: why, journalErr: errors.New("not read")}
		func() {
			// A panicking read is a failed read: the view goes on, stale.
			defer func() {
				if r := recover(); r != nil {
					msg.kindErrs = []error{recovered(r)}
				}
			}()
			msg = load(ctx, st, n, since)
		}()
		msg.gen, msg.read, msg.why, msg.at, msg.took = gen, read, why, now(), time.Since(start)
		return msg
	}
}

// followCmd follows the journal from the cursor; wait: wait for news
// first (readNow calls that wait off).
func (m *Model) followCmd(wait bool) tea.Cmd {
	m.reads++
	ctx, cancel := context.WithCancel(m.ctx)
	m.reading, m.cancelRead = true, cancel
	gen, read, st, cur, now := m.gen, m.reads, m.opts.Store, m.cursor, m.opts.Now
	return func() tea.Msg {
		defer cancel()
		var msg followedMsg
		func() {
			defer func() {
				if r := recover(); r != nil {
					msg = followedMsg{err: recovered(r)}
				}
			}()
			msg = follow(ctx, st, cur, wait)
		}()
		msg.gen, msg.read, msg.at = gen, read, now()
		return msg
	}
}

// pollMsg asks for the next read; tick ties it to the last schedule.
type pollMsg struct{ tick uint64 }

// schedule the next read d from now, or as long as the last read took if
// that is longer: a slow store (a long journal, a distant etcd) is read
// at most half the time, and reads never overlap. An action's outcome
// waiting to be shown is read for at once.
func (m *Model) schedule(d, took time.Duration) tea.Cmd {
	m.tick++
	tick := m.tick
	if len(m.outcomes) > 0 {
		return func() tea.Msg { return pollMsg{tick} }
	}
	return tea.Tick(max(d, took), func(time.Time) tea.Msg { return pollMsg{tick} })
}
