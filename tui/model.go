// Package tui is the live view of `kandev-exec watch`: hosts, task
// environments and the journal, followed as they change, with the
// teardown actions (drain, cordon, quarantine, archive, sweep) behind
// confirmations. It reads the records and the store only; what an action
// does is the caller's (Actions).
package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// Options configure a Model.
type Options struct {
	Store Store
	// Actions run what the action keys ask for; nil makes the view
	// read-only: no action key is bound.
	Actions Actions
	Scope   records.Scope
	// Since replays the journal after this sequence number into the
	// events pane; below 0 shows its tail.
	Since int64
	// Now is the clock of countdowns and ages; nil is time.Now.
	Now func() time.Time
	// Location writes times; nil is time.Local.
	Location *time.Location
	// Renderer paints; nil paints nothing (no colour, no attributes).
	Renderer *lipgloss.Renderer
	// Poll is how often the journal is read (default 250ms); Resync how
	// often everything is re-read regardless (default 10s), which also
	// catches a write whose journal entry a crash lost.
	Poll, Resync time.Duration
	// Context bounds the reads and the actions; cancelled, they stop.
	Context context.Context
	// Claims shows claim events from the start (C toggles them).
	Claims bool
}

// fallbackPoll is how often everything is re-read while the journal
// cannot be: the view is never more than this behind the disk.
const fallbackPoll = time.Second

type pane int

const (
	paneHosts pane = iota
	paneEnvs
	paneEvents
	panes
)

// list is a pane's rows after scope and filter, and its selection, kept
// by ID: when rows come and go the selection follows its row.
type list struct {
	ids   []string
	total int // rows in scope, before the filter
	sel   string
	cur   int
	top   int
}

// Model is the view's state. Only Update changes it.
type Model struct {
	opts Options
	ctx  context.Context
	keys keyMap
	st   styles

	width, height int
	ready         bool
	now           time.Time

	w        *world
	hostText map[string]string
	envText  map[string]string
	cursor   records.Cursor
	gen      uint64
	reading  bool
	since    int64
	// reads counts the reads started; the one in flight is a follow when
	// cancelRead is set, which calls off its wait. tick names the one poll
	// scheduled: an older one is dropped.
	reads      uint64
	cancelRead context.CancelFunc
	tick       uint64
	// outcomes are the view's own actions that ended, shown once a read
	// started after they ended has landed, so that the rows say what the
	// action did when its outcome does.
	outcomes []outcome

	loaded     bool
	lastRead   time.Time // when the store was last read without error
	lastFull   time.Time
	readErr    error
	journalErr error

	hosts, envs list
	focus       pane
	events      *ring
	evScroll    int // events pane: lines scrolled back from the newest

	filter    string
	filtering bool
	filterIn  textinput.Model
	// kept are the rows the filter keeps, by ID: their events stay in
	// the events pane whatever their text.
	keptHosts, keptEnvs map[string]bool
	claims              bool // claim events are shown

	dlg      *dialog
	hints    keyHints
	help     bool
	detail   *detail
	flashMsg string

	nextID  int
	running map[int]request
	// crash is a panic recovered in Update or View: the view quits.
	crash *panicError
}

// New builds the view; run it with Run, or with tea.NewProgram in tests.
func New(o Options) *Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	if o.Resync <= 0 {
		o.Resync = 10 * time.Second
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	m := &Model{opts: o, ctx: o.Context, keys: newKeyMap(o.Actions == nil), st: newStyles(o.Renderer),
		w: newWorld(), hostText: map[string]string{}, envText: map[string]string{},
		since: o.Since, events: newRing(ringCap), running: map[int]request{}, now: o.Now(), claims: o.Claims,
		keptHosts: map[string]bool{}, keptEnvs: map[string]bool{}}
	m.filterIn = m.newInput("text to match")
	m.filterIn.Prompt = "/"
	return m
}

// beatMsg ticks the countdowns once a second.
type beatMsg struct{}

func beat() tea.Cmd { return tea.Tick(time.Second, func(time.Time) tea.Msg { return beatMsg{} }) }

// actionDoneMsg is an action's outcome.
type actionDoneMsg struct {
	id  int
	err error
}

// outcome is an ended action's note, held until the first read started
// after it ended (a read numbered above after) has landed.
type outcome struct {
	after uint64
	note  event
}

// Init starts the first read and the heartbeat.
func (m *Model) Init() tea.Cmd { return tea.Batch(m.loadCmd("start"), beat()) }

// Update applies one message. It never blocks: reads and actions run in
// commands, whose results come back as messages. A panic quits the view
// with the terminal restored (Run returns it as an error).
func (m *Model) Update(msg tea.Msg) (model tea.Model, cmd tea.Cmd) {
	defer func() {
		if r := recover(); r != nil {
			// bubbletea renders the model returned: never nil.
			m.crash, model, cmd = recovered(r), m, tea.Quit
		}
	}()
	return m, m.update(msg)
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	if m.crash != nil {
		return tea.Quit // View crashed
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height, m.ready = msg.Width, msg.Height, true
		if m.detail != nil {
			m.detail.resize(m.width, m.height)
		}
	case tea.KeyMsg:
		cmd = m.key(msg)
	case loadedMsg:
		if msg.gen == m.gen {
			cmd = m.onLoaded(msg)
		}
	case followedMsg:
		if msg.gen == m.gen {
			cmd = m.onFollowed(msg)
		}
	case pollMsg:
		if msg.tick == m.tick && !m.reading {
			cmd = m.poll()
		}
	case beatMsg:
		m.now = m.opts.Now()
		cmd = beat()
	case actionDoneMsg:
		cmd = m.finished(msg)
	}
	m.fitAll()
	return cmd
}

// poll starts the next read: in full when due or when the journal cannot
// be followed, else a follow, which waits for news unless an action's
// outcome waits on it.
func (m *Model) poll() tea.Cmd {
	if m.journalErr != nil || m.opts.Now().Sub(m.lastFull) >= m.opts.Resync {
		return m.loadCmd("resync")
	}
	return m.followCmd(len(m.outcomes) == 0)
}

// readNow starts a read at once rather than at the next poll, for an
// action that ended: a follow waiting for news is called off (its result
// is dropped), a full re-read in flight is let land, and schedule then
// reads again at once.
func (m *Model) readNow() tea.Cmd {
	switch {
	case !m.reading:
		m.tick++ // the poll scheduled is not needed now
	case m.cancelRead != nil:
		m.cancelRead()
		m.gen++
		m.reading = false
	default:
		return nil
	}
	return m.poll()
}

// landed shows the outcomes that waited for the read numbered read.
func (m *Model) landed(read uint64) {
	waiting := m.outcomes[:0]
	for _, o := range m.outcomes {
		if o.after < read {
			m.events.push(o.note)
		} else {
			waiting = append(waiting, o)
		}
	}
	m.outcomes = waiting
}

// onLoaded swaps in a full re-read.
func (m *Model) onLoaded(msg loadedMsg) tea.Cmd {
	m.reading = false
	if msg.world == nil {
		// The read panicked: keep what is shown, marked stale, and retry.
		m.readErr, m.journalErr = msg.kindErrs[0], msg.journalErr
		m.landed(msg.read)
		return m.schedule(fallbackPoll, msg.took)
	}
	m.lastFull = msg.at
	m.journalErr = msg.journalErr
	if len(msg.kindErrs) == 0 {
		m.lastRead, m.readErr = msg.at, nil
	} else {
		m.readErr = msg.kindErrs[0]
	}
	old := m.cursor
	m.w, m.cursor = msg.world, msg.cursor
	m.hostText, m.envText = map[string]string{}, map[string]string{}
	for n := range m.w.hosts {
		m.hostText[n] = m.w.hostText(n)
	}
	for id := range m.w.tasks {
		m.envText[id] = m.w.envText(id)
	}
	if msg.journalErr == nil {
		switch {
		case m.loaded && msg.why == "resync" && old.Epoch == msg.cursor.Epoch:
			// Same journal: only what is new since the last entry shown.
			for _, e := range msg.tail {
				if e.Seq > old.Seq {
					m.push(e)
				}
			}
		default:
			m.events.reset()
			m.evScroll = 0
			for _, e := range msg.tail {
				m.push(e)
			}
		}
	}
	switch msg.why {
	case "start", "resync":
	default:
		m.addNote("re-read everything: "+msg.why, toneDim)
	}
	m.loaded = true
	m.refilter()
	m.landed(msg.read)
	m.refreshDetail()
	if msg.journalErr != nil {
		return m.schedule(fallbackPoll, msg.took)
	}
	return m.schedule(m.opts.Poll, msg.took)
}

// onFollowed applies what the journal added, or starts a full re-read when
// it cannot be followed.
func (m *Model) onFollowed(msg followedMsg) tea.Cmd {
	m.reading, m.cancelRead = false, nil
	switch {
	case msg.err != nil:
		// Read everything next time; the view says how old it is meanwhile.
		m.readErr = msg.err
		m.journalErr = msg.err
		m.landed(msg.read)
		return m.schedule(fallbackPoll, msg.took)
	case msg.brk == records.NewEpoch:
		return m.loadCmd("the journal was re-created (new epoch)")
	case msg.brk == records.Gap:
		return m.loadCmd(fmt.Sprintf("the journal skips from seq %d to %d", msg.from.Seq+uint64(len(msg.entries)), msg.gapAt))
	case msg.tooMany:
		return m.loadCmd(fmt.Sprintf("%d entries at once", len(msg.entries)))
	}
	a := newAffected()
	for _, c := range msg.changes {
		if c.err != nil {
			m.addNote(c.err.Error(), toneBad)
			continue
		}
		m.w.set(c.kind, c.name, c.v, a)
	}
	for _, e := range msg.entries {
		m.push(e)
	}
	if n := len(msg.entries); n > 0 {
		m.cursor.Seq = msg.entries[n-1].Seq
	}
	m.lastRead, m.readErr = msg.at, nil
	m.apply(a)
	m.landed(msg.read)
	m.refreshDetail()
	return m.schedule(m.opts.Poll, msg.took)
}

// apply brings rows up to date after changes to the world.
func (m *Model) apply(a *affected) {
	for n := range a.hosts {
		if m.w.hosts[n] == nil {
			delete(m.hostText, n)
		} else {
			m.hostText[n] = m.w.hostText(n)
		}
	}
	for id := range a.envs {
		if m.w.tasks[id] == nil {
			delete(m.envText, id)
		} else {
			m.envText[id] = m.w.envText(id)
		}
	}
	if a.order {
		m.w.hostOrder, m.w.envOrder = nil, nil
		m.w.order()
	}
	if len(a.hosts)+len(a.envs) > 0 {
		m.refilter()
	}
}

func (m *Model) push(e state.Entry) {
	ev := eventOf(e, m.w, m.clock)
	m.events.push(ev)
	if m.evScroll > 0 && m.visibleEvent(&ev) {
		m.evScroll++ // keep a scrolled-back events pane where it is
	}
}

func (m *Model) addNote(text string, t tone) {
	m.events.push(note(m.opts.Now(), text, t))
}

// flash shows a one-line message in the footer until the next key.
func (m *Model) flash(s string) { m.flashMsg = s }

func (m *Model) clock(t time.Time) string { return t.In(m.opts.Location).Format("15:04:05") }

// start runs an action in a command; its outcome comes back as an
// actionDoneMsg and shows in the events pane.
func (m *Model) start(r request) tea.Cmd {
	m.nextID++
	id, ctx, a := m.nextID, m.ctx, m.opts.Actions
	m.running[id] = r
	m.addNote(fmt.Sprintf("%s: started (action %d)", r.title(), id), tonePlain)
	return func() (msg tea.Msg) {
		// A panicking action fails; the view goes on.
		defer func() {
			if p := recover(); p != nil {
				msg = actionDoneMsg{id: id, err: recovered(p)}
			}
		}()
		return actionDoneMsg{id: id, err: r.call(ctx, a)}
	}
}

// finished notes an action's outcome and reads what it wrote at once; the
// note shows when that read lands, with the rows it changed.
func (m *Model) finished(msg actionDoneMsg) tea.Cmd {
	r, ok := m.running[msg.id]
	if !ok {
		return nil
	}
	delete(m.running, msg.id)
	text, t := fmt.Sprintf("%s: done (action %d)", r.title(), msg.id), toneGood
	switch {
	case msg.err != nil:
		text, t = fmt.Sprintf("%s: failed: %s", r.title(), firstLine(msg.err.Error())), toneBad
	case r.act == actDrain:
		text = fmt.Sprintf("%s: under way; the journal shows its progress (action %d)", r.title(), msg.id)
	}
	m.outcomes = append(m.outcomes, outcome{after: m.reads, note: note(m.opts.Now(), text, t)})
	return m.readNow()
}

func (m *Model) runningIDs() []int {
	ids := make([]int, 0, len(m.running))
	for id := range m.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// refilter recomputes which rows each pane shows, keeping each selection
// on its ID; a selected row that went away passes the selection to the
// row now in its place.
func (m *Model) refilter() {
	f := strings.ToLower(m.filter)
	sc := m.opts.Scope
	scopeHost := sc.Host
	if sc.Task != "" {
		if t := m.w.tasks[sc.Task]; t != nil {
			scopeHost = t.Host
		}
	}
	m.hosts.ids, m.hosts.total = m.hosts.ids[:0], 0
	for _, n := range m.w.hostOrder {
		if scopeHost != "" && n != scopeHost {
			continue
		}
		m.hosts.total++
		if strings.Contains(m.hostText[n], f) {
			m.hosts.ids = append(m.hosts.ids, n)
		}
	}
	m.envs.ids, m.envs.total = m.envs.ids[:0], 0
	for _, id := range m.w.envOrder {
		t := m.w.tasks[id]
		if !sc.Covers(t.Host, id) {
			continue
		}
		m.envs.total++
		if strings.Contains(m.envText[id], f) {
			m.envs.ids = append(m.envs.ids, id)
		}
	}
	m.hosts.reselect()
	m.envs.reselect()
	clear(m.keptHosts)
	clear(m.keptEnvs)
	if f != "" {
		for _, n := range m.hosts.ids {
			m.keptHosts[n] = true
		}
		for _, id := range m.envs.ids {
			m.keptEnvs[id] = true
		}
	}
}

func (l *list) reselect() {
	if i := slices.Index(l.ids, l.sel); i >= 0 {
		l.cur = i
		return
	}
	if len(l.ids) == 0 {
		l.sel, l.cur = "", 0
		return
	}
	l.cur = min(max(l.cur, 0), len(l.ids)-1)
	l.sel = l.ids[l.cur]
}

func (l *list) move(n int) {
	if len(l.ids) == 0 {
		return
	}
	l.cur = min(max(l.cur+n, 0), len(l.ids)-1)
	l.sel = l.ids[l.cur]
}

// fit scrolls l so its selection is on screen in rows lines.
func (l *list) fit(rows int) {
	if rows <= 0 {
		return
	}
	if l.cur < l.top {
		l.top = l.cur
	}
	if l.cur >= l.top+rows {
		l.top = l.cur - rows + 1
	}
	l.top = max(0, min(l.top, len(l.ids)-rows))
}

func (m *Model) fitAll() {
	if !m.ready {
		return
	}
	l := m.layout()
	m.hosts.fit(l.hosts - 2)
	m.envs.fit(l.envs - 2)
}

// visibleEvent reports whether the scope, the claims toggle and the
// filter keep e. The filter keeps the events whose text it matches, and
// every event of a row it keeps: a task kept by its name keeps its
// events, which name it by ID.
func (m *Model) visibleEvent(e *event) bool {
	own := e.kind == "" && e.typ == "watch"
	switch {
	case !own && !m.opts.Scope.Covers(e.host, e.task), e.claim && !m.claims:
		return false
	case m.filter == "", m.keptEnvs[e.task], e.kind == records.KindHost && m.keptHosts[e.name]:
		return true
	}
	return strings.Contains(e.lower, strings.ToLower(m.filter))
}
