package tui

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Actions are what the view can ask for. The watch command implements
// them with the same executor code as the CLI verbs; the view calls them
// from commands (never from Update), so a slow host never freezes it.
type Actions interface {
	// Cordon stops new launches on host; its sessions keep running.
	Cordon(ctx context.Context, host, reason string) error
	Uncordon(ctx context.Context, host string) error
	// Drain starts draining host (cordon, then stop each session
	// gracefully, waiting at most deadline) and returns once the drain is
	// under way; its progress arrives through the journal.
	Drain(ctx context.Context, host string, deadline time.Duration) error
	// Quarantine keeps host out of launches until readmitted, or for ttl
	// when ttl > 0.
	Quarantine(ctx context.Context, host, reason string, ttl time.Duration) error
	Readmit(ctx context.Context, host, reason string) error
	// Archive tears a task down: drain, cleanup script, reclaim if its
	// profile opts in.
	Archive(ctx context.Context, taskID string) error
	// Sweep runs the cleanup jobs that are due.
	Sweep(ctx context.Context) error
}

// act is one kind of action the view offers.
type act int

const (
	actCordon act = iota
	actUncordon
	actDrain
	actQuarantine
	actReadmit
	actArchive
	actSweep
	actQuit // quitting while actions are still running
)

// prompt is one question asked before an action's confirmation.
type prompt struct {
	label    string
	def      string // pre-filled answer
	hint     string
	duration bool // the answer is a Go duration (1h30m)
	optional bool // an empty answer is accepted
}

// spec is how the view offers an action: where it applies, what it asks,
// and whether the confirmation is typing the target's name (actions that
// are hard to undo) or a y/N question whose default is no.
type spec struct {
	verb    string
	on      pane // paneHosts, paneEnvs, or -1: anywhere
	prompts []prompt
	typed   bool
}

var reasonPrompt = prompt{label: "Reason", hint: "recorded on the host and shown to everyone"}

var specs = map[act]spec{
	actCordon:     {verb: "cordon", on: paneHosts, prompts: []prompt{reasonPrompt}},
	actUncordon:   {verb: "uncordon", on: paneHosts},
	actDrain:      {verb: "drain", on: paneHosts, prompts: []prompt{{label: "Deadline", def: "1h", duration: true, hint: "how long to wait for sessions to stop, e.g. 30m"}}},
	actQuarantine: {verb: "quarantine", on: paneHosts, typed: true, prompts: []prompt{reasonPrompt, {label: "TTL", duration: true, optional: true, hint: "e.g. 2h; empty: until readmitted"}}},
	actReadmit:    {verb: "readmit", on: paneHosts, prompts: []prompt{reasonPrompt}},
	actArchive:    {verb: "archive", on: paneEnvs, typed: true},
	actSweep:      {verb: "sweep", on: -1},
	actQuit:       {verb: "quit", on: -1},
}

// maxReason bounds a typed reason: it lands in records and every event.
const maxReason = 200

// check validates one answer, returning it cleaned.
func (p prompt) check(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "" && p.optional:
		return "", nil
	case v == "":
		return "", fmt.Errorf("%s is required", strings.ToLower(p.label))
	case p.duration:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return "", fmt.Errorf("%s %q is not a positive duration such as 45m or 2h", strings.ToLower(p.label), v)
		}
		return d.String(), nil
	case len(v) > maxReason:
		return "", fmt.Errorf("%s is %d bytes; at most %d", strings.ToLower(p.label), len(v), maxReason)
	case strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return "", fmt.Errorf("%s holds a control character", strings.ToLower(p.label))
	}
	return v, nil
}

// request is an action with its target fixed and its answers given: what
// the confirmation shows is exactly what runs.
type request struct {
	act     act
	target  string // host name or task ID; "" for a sweep
	answers []string
}

func (r request) duration(i int) time.Duration {
	if i >= len(r.answers) || r.answers[i] == "" {
		return 0
	}
	d, _ := time.ParseDuration(r.answers[i])
	return d
}

// call runs the request against a.
func (r request) call(ctx context.Context, a Actions) error {
	switch r.act {
	case actCordon:
		return a.Cordon(ctx, r.target, r.answers[0])
	case actUncordon:
		return a.Uncordon(ctx, r.target)
	case actDrain:
		return a.Drain(ctx, r.target, r.duration(0))
	case actQuarantine:
		return a.Quarantine(ctx, r.target, r.answers[0], r.duration(1))
	case actReadmit:
		return a.Readmit(ctx, r.target, r.answers[0])
	case actArchive:
		return a.Archive(ctx, r.target)
	case actSweep:
		return a.Sweep(ctx)
	}
	return fmt.Errorf("action %d has no call", r.act)
}

// title names an action and its target in one line, as the events pane
// and the confirmation show it.
func (r request) title() string {
	switch r.act {
	case actArchive:
		return "archive task " + r.target
	case actSweep:
		return "sweep"
	case actQuit:
		return "quit"
	}
	return specs[r.act].verb + " host " + r.target
}
