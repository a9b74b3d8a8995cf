package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// Model tests drive Update directly: reads and actions are commands,
// run here by hand in the order bubbletea would deliver their results.

func ready(t *testing.T, st Store, a Actions) *Model {
	t.Helper()
	m := New(options(st, a))
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	m.Update(m.loadCmd("start")())
	if !m.loaded {
		t.Fatal("not loaded")
	}
	return m
}

// press sends keys and returns the commands they gave.
func press(m *Model, keys ...tea.Msg) []tea.Cmd {
	var cmds []tea.Cmd
	for _, k := range keys {
		if _, c := m.Update(k); c != nil {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// settleFollow reads the journal once, as the next poll would.
func settleFollow(t *testing.T, m *Model) tea.Cmd {
	t.Helper()
	_, cmd := m.Update(m.followCmd(true)())
	return cmd
}

// finish delivers an action's outcome, then the read it starts at once,
// as bubbletea would.
func finish(t *testing.T, m *Model, action tea.Cmd) {
	t.Helper()
	_, read := m.Update(action())
	if read == nil {
		t.Fatal("the action's end started no read")
	}
	m.Update(read())
}

func lastNote(m *Model) string {
	for i := m.events.n - 1; i >= 0; i-- {
		if e := m.events.at(i); e.kind == "" {
			return e.detail
		}
	}
	return ""
}

// Every action, from its key to its call: the prompts, the confirmation
// naming the target and the effect, and the call with the answers given.
func TestKeysDriveEveryActionThroughItsConfirmation(t *testing.T) {
	cases := []struct {
		name    string
		keys    []tea.Msg // from the hosts pane, web-1 selected
		effect  string    // in the confirmation
		confirm []tea.Msg
		call    string
	}{
		{"cordon", []tea.Msg{down, down, runes("c"), runes("kernel upgrade"), enter},
			"Cordon host web-3: it takes no new launches; its 0 running sessions keep running. Reason: kernel upgrade.",
			[]tea.Msg{runes("y")}, `cordon web-3 "kernel upgrade"`},
		{"uncordon", []tea.Msg{down, down, runes("u")}, "Uncordon host web-3: it takes new launches again.",
			[]tea.Msg{runes("y")}, "uncordon web-3"},
		{"drain", []tea.Msg{runes("d"), enter},
			"Drain host web-1: cordon it, then stop its 2 running sessions gracefully, waiting at most 1h0m0s for them.",
			[]tea.Msg{runes("y")}, "drain web-1 1h0m0s"},
		{"drain with a deadline", []tea.Msg{runes("d"), tea.KeyMsg{Type: tea.KeyBackspace}, tea.KeyMsg{Type: tea.KeyBackspace}, runes("45m"), enter},
			"waiting at most 45m0s", []tea.Msg{runes("y")}, "drain web-1 45m0s"},
		{"quarantine with a TTL", []tea.Msg{down, runes("Q"), runes("disk full"), enter, runes("2h"), enter},
			"Quarantine host web-2 for 2h0m0s: it takes no launches. Reason: disk full.",
			[]tea.Msg{runes("web-2"), enter}, `quarantine web-2 "disk full" 2h0m0s`},
		{"quarantine until readmitted", []tea.Msg{runes("Q"), runes("flapping"), enter, enter},
			"Quarantine host web-1 until readmitted", []tea.Msg{runes("web-1"), enter}, `quarantine web-1 "flapping" 0s`},
		{"readmit", []tea.Msg{down, runes("r"), runes("disk cleaned"), enter},
			"Readmit host web-2: it takes new launches again. Reason: disk cleaned.",
			[]tea.Msg{runes("y")}, `readmit web-2 "disk cleaned"`},
		{"archive by ID", []tea.Msg{tab, down, down, runes("a")},
			"Archive task tpend00000001 (bump-deps) on web-2: drain its sessions, run its cleanup script, and remove its directory if its profile opts in.",
			[]tea.Msg{runes("tpend00000001"), enter}, "archive tpend00000001"},
		{"archive by name", []tea.Msg{tab, down, down, runes("a")}, "Archive task tpend00000001",
			[]tea.Msg{runes("bump-deps"), enter}, "archive tpend00000001"},
		{"sweep", []tea.Msg{runes("S")}, "Run a sweep now: every cleanup job that is due is attempted (0 due).",
			[]tea.Msg{runes("y")}, "sweep"},
	}
	st := teardownStore(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{}
			m := ready(t, st, rec)
			press(m, c.keys...)
			if m.dlg == nil {
				t.Fatalf("no confirmation open; flash %q", m.flashMsg)
			}
			if got := strings.Join(strings.Fields(strings.Join(m.dialogLines(200), " ")), " "); !strings.Contains(got, c.effect) {
				t.Fatalf("confirmation %q does not say %q", got, c.effect)
			}
			// Neither Enter nor the key that opened it confirms.
			if cmds := press(m, enter, c.keys[len(c.keys)-1]); m.dlg == nil || len(cmds) > 0 || len(m.running) > 0 {
				t.Fatalf("confirmed by enter or the opening key")
			}
			if m.dlg.spec.typed {
				// The wrong name is refused, and the dialog stays.
				press(m, runes("nope"), enter)
				if m.dlg == nil || !strings.Contains(m.dlg.err, "exactly") {
					t.Fatalf("wrong name accepted: %+v", m.dlg)
				}
				m.dlg.input.SetValue("")
			}
			cmds := press(m, c.confirm...)
			if m.dlg != nil || len(cmds) != 1 {
				t.Fatalf("not confirmed: dialog %v, %d commands", m.dlg != nil, len(cmds))
			}
			if len(m.running) != 1 {
				t.Fatalf("running %v", m.running)
			}
			finish(t, m, cmds[0])
			if got := rec.list(); !slices.Equal(got, []string{c.call}) {
				t.Fatalf("calls %q, want %q", got, c.call)
			}
			if len(m.running) != 0 || !strings.Contains(lastNote(m), "done") && !strings.Contains(lastNote(m), "under way") {
				t.Fatalf("outcome not shown: %q", lastNote(m))
			}
		})
	}
}

func TestEscCancelsEveryStepAndNothingRuns(t *testing.T) {
	rec := &recorder{}
	m := ready(t, teardownStore(t), rec)
	for _, keys := range [][]tea.Msg{
		{runes("c"), esc},                           // at a prompt
		{runes("u"), runes("n")},                    // at y/N
		{runes("u"), esc},                           // at y/N
		{runes("Q"), runes("x"), enter, enter, esc}, // at the typed confirmation
	} {
		if cmds := press(m, keys...); len(cmds) != 0 || m.dlg != nil {
			t.Fatalf("%v: %d commands, dialog open %v", keys, len(cmds), m.dlg != nil)
		}
	}
	if len(rec.list()) != 0 {
		t.Fatalf("calls %q", rec.list())
	}
}

func TestPromptsRefuseBadAnswers(t *testing.T) {
	m := ready(t, teardownStore(t), &recorder{})
	press(m, runes("c"), enter)
	if m.dlg == nil || m.dlg.step != 0 || !strings.Contains(m.dlg.err, "reason is required") {
		t.Fatalf("empty reason accepted: %+v", m.dlg)
	}
	press(m, esc, runes("d"), tea.KeyMsg{Type: tea.KeyBackspace}, tea.KeyMsg{Type: tea.KeyBackspace}, runes("soon"), enter)
	if m.dlg == nil || !strings.Contains(m.dlg.err, `deadline "soon" is not a positive duration`) {
		t.Fatalf("bad deadline accepted: %+v", m.dlg)
	}
}

// Actions act on the pane's own kind: a host action on a task, or none
// selected, explains instead of guessing a target.
func TestActionsNeedTheirKindOfSelection(t *testing.T) {
	m := ready(t, teardownStore(t), &recorder{})
	press(m, tab, runes("c"))
	if m.dlg != nil || !strings.Contains(m.flashMsg, "cordon acts on a host") {
		t.Fatalf("dialog %v, flash %q", m.dlg != nil, m.flashMsg)
	}
	press(m, runes("a"))
	if m.dlg == nil || m.dlg.req.target != "tgone00000001" {
		t.Fatalf("archive target %+v", m.dlg)
	}
}

// A read-only view binds no action key: pressing one does nothing.
func TestReadOnlyBindsNoActionKey(t *testing.T) {
	m := ready(t, teardownStore(t), nil)
	for _, k := range []string{"c", "u", "d", "Q", "r", "S"} {
		press(m, runes(k))
		if m.dlg != nil {
			t.Fatalf("%s opened a dialog in a read-only view", k)
		}
	}
}

// The selection follows its host when rows are added above it, and a
// confirmation keeps the target it opened on while rows move under it
// (k9s #1593: the next delete hit another row).
func TestSelectionAndTargetKeptByIDAcrossRefresh(t *testing.T) {
	st := teardownStore(t)
	rec := &recorder{}
	m := ready(t, st, rec)
	press(m, down, down) // web-3
	if m.hosts.sel != "web-3" || m.hosts.cur != 2 {
		t.Fatalf("selected %s at %d", m.hosts.sel, m.hosts.cur)
	}
	press(m, runes("c"), runes("kernel"), enter)
	addHost(t, st, host("web-0", records.HostAdmitted, "", "", nil, nil))
	addHost(t, st, host("web-00", records.HostAdmitted, "", "", nil, nil))
	settleFollow(t, m)
	if m.hosts.sel != "web-3" || m.hosts.cur != 4 || m.hosts.ids[4] != "web-3" {
		t.Fatalf("after refresh: selected %s at %d of %v", m.hosts.sel, m.hosts.cur, m.hosts.ids)
	}
	cmds := press(m, runes("y"))
	m.Update(cmds[0]())
	if got := rec.list(); !slices.Equal(got, []string{`cordon web-3 "kernel"`}) {
		t.Fatalf("calls %q", got)
	}
}

// A confirmation whose target was removed meanwhile runs nothing.
func TestConfirmationOfAVanishedTargetRunsNothing(t *testing.T) {
	st := teardownStore(t)
	rec := &recorder{}
	m := ready(t, st, rec)
	press(m, runes("u"))
	rec0, _ := st.Get(context.Background(), records.KindHost, "web-1")
	if err := st.Delete(context.Background(), records.KindHost, "web-1", rec0.Revision, state.Event{Type: "host.removed"}); err != nil {
		t.Fatal(err)
	}
	settleFollow(t, m)
	if cmds := press(m, runes("y")); len(cmds) != 0 || len(rec.list()) != 0 {
		t.Fatalf("ran on a vanished host: %q", rec.list())
	}
	if !strings.Contains(lastNote(m), "the host is gone; nothing done") {
		t.Fatalf("note %q", lastNote(m))
	}
	if m.hosts.sel != "web-2" {
		t.Fatalf("selection did not pass to the row in its place: %q", m.hosts.sel)
	}
}

func TestFailedActionShowsInEventsPane(t *testing.T) {
	rec := &recorder{err: errors.New("host web-1 is unreachable\nsecond line")}
	m := ready(t, teardownStore(t), rec)
	cmds := press(m, runes("u"), runes("y"))
	finish(t, m, cmds[0])
	if got := lastNote(m); got != "uncordon host web-1: failed: host web-1 is unreachable" {
		t.Fatalf("note %q", got)
	}
}

// Quitting while an action runs asks first; y quits, esc stays.
func TestQuitAsksWhileActionsRun(t *testing.T) {
	m := ready(t, teardownStore(t), &recorder{})
	press(m, runes("S"), runes("y"))
	press(m, runes("q"))
	if m.dlg == nil || m.dlg.req.act != actQuit {
		t.Fatal("quit did not ask")
	}
	if !strings.Contains(strings.Join(m.dialogLines(200), " "), "Still running: sweep") {
		t.Fatalf("%q", m.dialogLines(200))
	}
	if cmds := press(m, esc); len(cmds) != 0 || m.dlg != nil {
		t.Fatal("esc did not cancel the quit")
	}
	press(m, runes("q"))
	cmds := press(m, runes("y"))
	if len(cmds) != 1 {
		t.Fatal("y did not quit")
	}
	if _, ok := cmds[0]().(tea.QuitMsg); !ok {
		t.Fatal("not a quit")
	}
}

// The follow reads only what changed, and the rows show it.
func TestFollowAppliesChangedRecords(t *testing.T) {
	st := teardownStore(t)
	m := ready(t, st, nil)
	before := m.cursor
	tk := task("tready0000001", "fix-login", "web-1", records.PhaseDraining, 3*time.Hour)
	tk.Teardown = &records.Teardown{Trigger: records.TriggerArchive, Step: records.StepDrain}
	addTask(t, st, tk)
	addSession(t, st, &records.Session{ID: "sready0000001", TaskID: tk.ID, Host: "web-1", State: records.SessionStopped})
	settleFollow(t, m)
	if m.cursor.Seq != before.Seq+2 || m.cursor.Epoch != before.Epoch {
		t.Fatalf("cursor %+v after %+v", m.cursor, before)
	}
	cells, _ := m.w.envCells("tready0000001", m.now)
	if cells[3] != "draining" || cells[6] != "drain" {
		t.Fatalf("row %q", cells)
	}
	if m.w.running["web-1"] != 1 {
		t.Fatalf("running on web-1: %d", m.w.running["web-1"])
	}
}

// gappy hides some sequence numbers from the journal, as a store that
// compacted or lost entries would.
type gappy struct {
	*state.FileStore
	hide map[uint64]bool
}

func (g *gappy) Journal(ctx context.Context, after uint64) ([]state.Entry, error) {
	es, err := g.FileStore.Journal(ctx, after)
	return slices.DeleteFunc(es, func(e state.Entry) bool { return g.hide[e.Seq] }), err
}

func (g *gappy) Follow(ctx context.Context, epoch, after uint64) ([]state.Entry, error) {
	es, err := g.FileStore.Follow(ctx, epoch, after)
	return slices.DeleteFunc(es, func(e state.Entry) bool { return g.hide[e.Seq] }), err
}

func TestJournalGapTriggersFullReload(t *testing.T) {
	fs := teardownStore(t)
	g := &gappy{FileStore: fs, hide: map[uint64]bool{}}
	m := ready(t, g, nil)
	at := m.cursor.Seq
	addHost(t, fs, host("web-7", records.HostCordoned, "lost in the gap", "carol", at0(), nil))
	addHost(t, fs, host("web-8", records.HostAdmitted, "", "", nil, nil))
	g.hide[at+1] = true
	cmd := settleFollow(t, m)
	if m.w.hosts["web-7"] != nil || m.w.hosts["web-8"] != nil {
		t.Fatal("applied entries across a gap")
	}
	if cmd == nil {
		t.Fatal("no re-read after a gap")
	}
	msg, ok := cmd().(loadedMsg)
	if !ok {
		t.Fatalf("gap gave %T, want a full re-read", cmd())
	}
	m.Update(msg)
	if m.w.hosts["web-7"] == nil || m.w.hosts["web-8"] == nil {
		t.Fatal("the re-read missed records")
	}
	if want := "re-read everything: the journal skips from seq "; !strings.Contains(lastNote(m), want) {
		t.Fatalf("note %q", lastNote(m))
	}
	if m.cursor.Seq != at+2 {
		t.Fatalf("cursor %d, want %d", m.cursor.Seq, at+2)
	}
}

func at0() *time.Time { v := t0; return &v }

// A re-created journal (new epoch) resets the view: the events pane
// starts over with the new journal, and every record is re-read.
func TestNewEpochResets(t *testing.T) {
	st := teardownStore(t)
	m := ready(t, st, nil)
	old := m.cursor
	if err := os.Remove(filepath.Join(st.Dir(), "journal.jsonl")); err != nil {
		t.Fatal(err)
	}
	addHost(t, st, host("web-9", records.HostQuarantined, "new epoch", "dave", at0(), nil))
	cmd := settleFollow(t, m)
	msg, ok := cmd().(loadedMsg)
	if !ok {
		t.Fatalf("a new epoch gave %T, want a full re-read", cmd())
	}
	m.Update(msg)
	if m.cursor.Epoch == old.Epoch || m.cursor.Seq != 1 {
		t.Fatalf("cursor %+v, old %+v", m.cursor, old)
	}
	if m.w.hosts["web-9"] == nil || len(m.w.hosts) != 5 {
		t.Fatalf("hosts %d, web-9 %v", len(m.w.hosts), m.w.hosts["web-9"] != nil)
	}
	// One entry of the new epoch, then the note: the old epoch's are gone.
	if m.events.n != 2 || m.events.at(0).name != "web-9" || !strings.Contains(m.events.at(1).detail, "new epoch") {
		t.Fatalf("events after reset: %d, first %+v", m.events.n, *m.events.at(0))
	}
}

// failing fails every read after it is switched on.
type failing struct {
	*state.FileStore
	journal, all error
}

func (f *failing) Journal(ctx context.Context, after uint64) ([]state.Entry, error) {
	if f.journal != nil {
		return nil, f.journal
	}
	return f.FileStore.Journal(ctx, after)
}

func (f *failing) Follow(ctx context.Context, epoch, after uint64) ([]state.Entry, error) {
	if f.journal != nil {
		return nil, f.journal
	}
	return f.FileStore.Follow(ctx, epoch, after)
}

func (f *failing) List(ctx context.Context, k state.Kind) ([]state.Record, error) {
	if f.all != nil {
		return nil, f.all
	}
	return f.FileStore.List(ctx, k)
}

// When the journal cannot be read the view polls everything every
// second instead, and says so; when nothing can be read it says how old
// what it shows is.
func TestUnreadableJournalFallsBackToPollingAndStaleIsShown(t *testing.T) {
	f := &failing{FileStore: teardownStore(t)}
	clock := t0
	o := options(f, nil)
	o.Now = func() time.Time { return clock }
	m := New(o)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m.Update(m.loadCmd("start")())

	f.journal = errors.New("corrupt journal line 7")
	settleFollow(t, m)
	if m.journalErr == nil {
		t.Fatal("journal error not kept")
	}
	clock = clock.Add(time.Second)
	_, cmd := m.Update(pollMsg{tick: m.tick})
	if _, ok := cmd().(loadedMsg); !ok {
		t.Fatal("no full re-read while the journal is unreadable")
	}
	m.Update(m.loadCmd("resync")())
	m.now = clock
	if got := m.titleLine(); !strings.Contains(got, "journal unreadable: re-reading every 1s") {
		t.Fatalf("title %q", got)
	}

	f.all = errors.New("disk on fire")
	m.Update(m.loadCmd("resync")())
	clock = clock.Add(5 * time.Second)
	m.Update(beatMsg{})
	if got := m.titleLine(); !strings.Contains(got, "STALE 5s: host records: disk on fire") {
		t.Fatalf("title %q", got)
	}
}

// Results of a read started before a re-read are dropped: they would
// apply old state over new.
func TestResultsOfAnOlderReadAreDropped(t *testing.T) {
	st := teardownStore(t)
	m := ready(t, st, nil)
	stale := m.followCmd(true)
	addHost(t, st, host("web-7", records.HostAdmitted, "", "", nil, nil))
	m.Update(m.loadCmd("resync")())
	seq := m.cursor.Seq
	rec0, _ := st.Get(context.Background(), records.KindHost, "web-7")
	_ = st.Delete(context.Background(), records.KindHost, "web-7", rec0.Revision, state.Event{Type: "host.removed"})
	msg := stale().(followedMsg) // read now, but started before the re-read
	m.Update(msg)
	if m.cursor.Seq != seq || m.w.hosts["web-7"] == nil {
		t.Fatalf("an old read was applied: cursor %d (want %d)", m.cursor.Seq, seq)
	}
}

func TestEventRingIsBounded(t *testing.T) {
	r := newRing(ringCap)
	for i := 0; i < 3*ringCap+7; i++ {
		r.push(event{seq: uint64(i)})
	}
	if r.n != ringCap || r.at(0).seq != 2*ringCap+7 || r.at(ringCap-1).seq != 3*ringCap+6 {
		t.Fatalf("n %d, oldest %d, newest %d", r.n, r.at(0).seq, r.at(ringCap-1).seq)
	}
}

// Text from records (a reason typed by anyone, an error quoting a host)
// never reaches the terminal raw.
func TestHostileTextIsEscaped(t *testing.T) {
	st := newStore(t)
	addHost(t, st, host("web-1", records.HostCordoned, "ok\x1b[2J\rforged", "x\u202e", at0(), nil))
	m := ready(t, st, nil)
	v := m.View()
	if strings.ContainsAny(v, "\x1b\r\u202e") {
		t.Fatalf("raw control in view: %q", v)
	}
	if !strings.Contains(v, `ok\x1b[2J\rforged`) {
		t.Fatalf("escaped reason missing:\n%s", v)
	}
}

func TestScopeToHostAndTask(t *testing.T) {
	st := teardownStore(t)
	o := options(st, nil)
	o.Scope = records.Scope{Host: "web-2"}
	m := New(o)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	m.Update(m.loadCmd("start")())
	if !slices.Equal(m.hosts.ids, []string{"web-2"}) || !slices.Equal(m.envs.ids, []string{"tpend00000001"}) {
		t.Fatalf("host scope: %v %v", m.hosts.ids, m.envs.ids)
	}
	for i := 0; i < m.events.n; i++ {
		if e := m.events.at(i); m.visibleEvent(e) && e.host != "web-2" {
			t.Fatalf("event about %s shown in host scope", e.host)
		}
	}
	o.Scope = records.Scope{Task: "tfail00000001"}
	m = New(o)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	m.Update(m.loadCmd("start")())
	if !slices.Equal(m.hosts.ids, []string{"web-3"}) || !slices.Equal(m.envs.ids, []string{"tfail00000001"}) {
		t.Fatalf("task scope: %v %v", m.hosts.ids, m.envs.ids)
	}
}

// --since replays the journal from a sequence number into the events
// pane.
func TestSinceReplaysFromASequence(t *testing.T) {
	st := teardownStore(t)
	o := options(st, nil)
	o.Since = 12
	m := New(o)
	m.Update(m.loadCmd("start")())
	if m.events.n != 2 || m.events.at(0).seq != 13 {
		t.Fatalf("replayed %d events from %d", m.events.n, m.events.at(0).seq)
	}
}

// The detail view never prints a launch's --env values.
func TestDetailMasksLaunchEnvValues(t *testing.T) {
	st := teardownStore(t)
	tk := task("tready0000001", "fix-login", "web-1", records.PhaseReady, 3*time.Hour)
	tk.LaunchEnv = []string{"API_TOKEN=hunter2", "MODE=fast"}
	addTask(t, st, tk)
	m := ready(t, st, nil)
	press(m, tab, down, enter)
	if m.detail == nil || m.detail.id != "tready0000001" {
		t.Fatalf("detail %+v", m.detail)
	}
	if strings.Contains(m.detail.text, "hunter2") || !strings.Contains(m.detail.text, `"API_TOKEN=***"`) {
		t.Fatalf("detail:\n%s", m.detail.text)
	}
}
