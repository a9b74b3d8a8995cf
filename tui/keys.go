package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key the view answers to. Help (`?` and the footer) is
// generated from these same bindings, so it cannot list a key the view
// ignores or miss one it acts on. Action keys are unbound in a read-only
// view.
type keyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	NextPane, PrevPane                      key.Binding
	Detail, Filter, ClearFilter, Help, Quit key.Binding
	Claims                                  key.Binding

	Cordon, Uncordon, Drain, Quarantine, Readmit, Archive, Sweep key.Binding

	// In a confirmation: the key that confirms differs from every key
	// that opens one, and Enter never confirms.
	Confirm, Cancel, Submit key.Binding
}

func newKeyMap(readOnly bool) keyMap {
	b := func(keys []string, help, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	k := keyMap{
		Up:          b([]string{"up", "k"}, "k/up", "select the row above"),
		Down:        b([]string{"down", "j"}, "j/down", "select the row below"),
		PageUp:      b([]string{"pgup"}, "pgup", "one page up"),
		PageDown:    b([]string{"pgdown"}, "pgdn", "one page down"),
		Top:         b([]string{"home", "g"}, "g/home", "first row"),
		Bottom:      b([]string{"end", "G"}, "G/end", "last row"),
		NextPane:    b([]string{"tab"}, "tab", "next pane"),
		PrevPane:    b([]string{"shift+tab"}, "shift+tab", "previous pane"),
		Detail:      b([]string{"enter"}, "enter", "detail of the selected row"),
		Filter:      b([]string{"/"}, "/", "filter rows by text"),
		ClearFilter: b([]string{"esc"}, "esc", "clear the filter, close a view"),
		Help:        b([]string{"?"}, "?", "this help"),
		Quit:        b([]string{"q", "ctrl+c"}, "q/ctrl+c", "quit"),
		Claims:      b([]string{"C"}, "C", "show or hide claim events"),

		Cordon:     b([]string{"c"}, "c", "cordon host: no new launches (reason)"),
		Uncordon:   b([]string{"u"}, "u", "uncordon host"),
		Drain:      b([]string{"d"}, "d", "drain host: stop its sessions (deadline)"),
		Quarantine: b([]string{"Q"}, "Q", "quarantine host (reason, TTL; type name)"),
		Readmit:    b([]string{"r"}, "r", "readmit host (reason)"),
		Archive:    b([]string{"a"}, "a", "archive task (type its name)"),
		Sweep:      b([]string{"S"}, "S", "run a sweep of due cleanup jobs now"),

		Confirm: b([]string{"y"}, "y", "confirm"),
		Cancel:  b([]string{"n", "esc"}, "n/esc", "cancel"),
		Submit:  b([]string{"enter"}, "enter", "answer a prompt"),
	}
	if readOnly {
		for _, a := range k.actions() {
			a.Unbind()
		}
	}
	return k
}

func (k *keyMap) actions() []*key.Binding {
	return []*key.Binding{&k.Cordon, &k.Uncordon, &k.Drain, &k.Quarantine, &k.Readmit, &k.Archive, &k.Sweep}
}

// groups is the `?` view: rows of side-by-side columns of keys.
func (k keyMap) groups() [][][]key.Binding {
	return [][][]key.Binding{
		{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.NextPane, k.PrevPane},
			{k.Detail, k.Filter, k.ClearFilter, k.Claims, k.Help, k.Quit}},
		{{k.Cordon, k.Uncordon, k.Drain, k.Quarantine, k.Readmit, k.Archive, k.Sweep},
			{k.Submit, k.Confirm, k.Cancel}},
	}
}

// footer is the reminder for a pane, wrapped to the terminal's width:
// the keys that act there first (? lists all).
func (k keyMap) footer(p pane) []key.Binding {
	short := func(b key.Binding, keyName, desc string) key.Binding {
		b.SetHelp(keyName, desc)
		return b
	}
	var out []key.Binding
	switch p {
	case paneHosts:
		out = append(out, short(k.Cordon, "c", "cordon"), short(k.Uncordon, "u", "uncordon"), short(k.Drain, "d", "drain"),
			short(k.Quarantine, "Q", "quarantine"), short(k.Readmit, "r", "readmit"))
	case paneEnvs:
		out = append(out, short(k.Archive, "a", "archive"))
	case paneEvents:
		out = append(out, short(k.Claims, "C", "claims"))
	}
	move := key.NewBinding(key.WithKeys("j", "k"), key.WithHelp("j/k", "move"))
	return append(out, short(k.Sweep, "S", "sweep"), short(k.Help, "?", "help"), short(k.Quit, "q", "quit"),
		short(k.Filter, "/", "filter"), short(k.Detail, "enter", "detail"), short(k.NextPane, "tab", "pane"), move)
}
