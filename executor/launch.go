package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/shquote"
	"github.com/kdlbs/kandev-exec/records"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/ssh"
)

// Launch progress steps, in order (docs/architecture.md, "A launch, step by
// step").
const (
	StepConnecting    = "Connecting"
	StepDetecting     = "Detecting remote OS"
	StepUploading     = "Uploading helper"
	StepHelperCached  = "Helper cached"
	StepPreparing     = "Preparing task directory"
	StepPrepareScript = "Running prepare script"
	StepStarting      = "Starting controller"
	// The helper connects to the controller it started and relays its
	// proof (protocol.Started).
	StepConnectingCtrl = protocol.StepProof
)

// LaunchOptions are `task launch`'s inputs.
type LaunchOptions struct {
	Profile string
	Agent   string
	Repo    string // overrides the primary repository's URL
	Branch  string // base branch for the task branch
	Name    string
	Env     []string // --env K=V
	Command []string // after --
	// MaxRuntime shortens the profile's max_runtime (0: the profile's).
	MaxRuntime time.Duration
	Progress   func(step string)
	Warn       func(msg string)
	Output     func(line string)
	// IdempotencyKey, when set, makes the launch the one answer for that
	// key (LaunchOnce); Outcome says how a failure is reported, to be
	// answered again as reported.
	IdempotencyKey string
	Outcome        func(err error, t *records.Task) records.LaunchOutcome
}

// Reports is where a launch tells its user how it goes; any may be nil.
type Reports struct {
	Progress func(step string) // a step begins, or news of the one under way
	Warn     func(msg string)  // something to know that does not stop it
	Output   func(line string) // a line of the prepare script's output, masked
}

// RefusedError: the host takes no new launches (exit 9).
type RefusedError struct {
	Host   string
	Status records.HostStatus
	Reason string
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("host %s is %s: no new launches", e.Host, e.Status)
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	next := "`kandev-exec host uncordon " + e.Host + "`"
	if e.Status == records.HostQuarantined {
		next = "`kandev-exec host readmit " + e.Host + " --reason R`"
	}
	return msg + "; launch on another host, or " + next
}

// launchPlan is everything checked locally before any remote effect.
type launchPlan struct {
	profile *profiles.Profile
	agent   *profiles.AgentPreset
	launch  []profiles.EnvEntry
	host    *records.Host
	command string
	// maxRuntime and idle bound the agent on the host (0: unbounded).
	maxRuntime, idle time.Duration
}

// planLaunch reads and checks everything a launch needs, so that a bad
// profile, an untrusted or refused host, or an environment conflict stops
// the launch before anything happens on the host.
func (e *Executor) planLaunch(ctx context.Context, o LaunchOptions, storedCommand string) (*launchPlan, error) {
	lp := &launchPlan{}
	var err error
	if lp.launch, err = profiles.ParseLaunchEnv(o.Env); err != nil {
		return nil, err
	}
	if lp.profile, _, err = records.Get[profiles.Profile](ctx, e.cfg.Store, records.KindProfile, o.Profile); err != nil {
		return nil, err
	}
	if o.Agent != "" {
		if lp.agent, err = e.agentPreset(ctx, o.Agent); err != nil {
			return nil, err
		}
	}
	if lp.host, _, err = e.getHost(ctx, lp.profile.Host); err != nil {
		return nil, err
	}
	if err := admitted(lp.host); err != nil {
		return nil, err
	}
	if lp.maxRuntime, lp.idle, err = launchBounds(lp.profile, o.MaxRuntime); err != nil {
		return nil, err
	}
	argv := o.Command
	if lp.agent != nil {
		argv = append(append([]string{}, lp.agent.Command...), o.Command...)
	}
	switch {
	case len(argv) > 0:
		lp.command = shellJoin(argv)
	case storedCommand != "":
		lp.command = storedCommand
	default:
		return nil, &UsageError{Msg: "nothing to run: pass the command after --, or --agent NAME"}
	}
	if err := profiles.ValidateDefinitions(profiles.Assemble(profiles.RuntimePlaceholders(), lp.profile, lp.agent, lp.launch)); err != nil {
		explain := "kandev-exec profile env " + lp.profile.Name
		if o.Agent != "" {
			explain += " --agent " + o.Agent
		}
		return nil, fmt.Errorf("profile %s on host %s: %w; `%s --explain` shows every origin", lp.profile.Name, lp.host.Name, err, explain)
	}
	// Every reference must resolve now: a missing secret found after the
	// task dir exists would leave a half-made task behind.
	if _, _, err := profiles.Resolve(profiles.Assemble(profiles.RuntimePlaceholders(), lp.profile, lp.agent, lp.launch), e.vault.Reveal); err != nil {
		var se *profiles.SecretError
		if errors.As(err, &se) && se.Err != nil {
			return nil, fmt.Errorf("profile %s: %w: %v", lp.profile.Name, err, se.Err)
		}
		return nil, fmt.Errorf("profile %s: %w", lp.profile.Name, err)
	}
	return lp, nil
}

// admitted refuses hosts that are cordoned, draining or quarantined (a
// quarantine whose --ttl ran out is over), and hosts with no pinned key.
func admitted(h *records.Host) error {
	if s := h.EffectiveStatus(time.Now()); s != records.HostAdmitted {
		return &RefusedError{Host: h.Name, Status: s, Reason: h.StatusReason}
	}
	if len(h.Pins) == 0 {
		return &ssh.Error{Host: h.Name, Hop: h.Alias, Class: ssh.ClassTrustRequired,
			Err:  errors.New("host key not trusted yet"),
			Hint: fmt.Sprintf("run `kandev-exec host test %s`, then `kandev-exec host trust %s`", h.Name, h.Name)}
	}
	return nil
}

// programOf is the program a command made by shellJoin starts with, or ""
// when that cannot be told: a command not made by shellJoin, or one that
// starts with an assignment.
func programOf(command string) string {
	var b strings.Builder
	for i := 0; i < len(command) && command[i] != ' '; i++ {
		switch c := command[i]; c {
		case '\'', '"':
			j := strings.IndexByte(command[i+1:], c)
			if j < 0 {
				return ""
			}
			b.WriteString(command[i+1 : i+1+j])
			i += j + 1
		default:
			if strings.IndexByte(shquote.Safe, c) < 0 {
				return ""
			}
			b.WriteByte(c)
		}
	}
	if p := b.String(); !strings.Contains(p, "=") {
		return p
	}
	return ""
}

func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shquote.Quote(a)
	}
	return strings.Join(q, " ")
}

// Launch creates a task and its first session: intent recorded first,
// then connect, helper, task directory, prepare script, controller.
func (e *Executor) Launch(ctx context.Context, o LaunchOptions) (*records.Task, *records.Session, error) {
	lp, err := e.planLaunch(ctx, o, "")
	if err != nil {
		return nil, nil, err
	}
	now := time.Now().UTC().Truncate(time.Second)
	t := &records.Task{ID: newID("t"), Name: o.Name, Profile: lp.profile.Name, Agent: o.Agent, Host: lp.host.Name,
		Root: lp.profile.WorkdirRoot, Branch: o.Branch, Command: lp.command, Phase: records.PhaseAllocating,
		OperationID: newID("op"), CreatedAt: now, Sessions: []string{}, Launcher: launcher()}
	if t.Root == "" {
		t.Root = lp.host.WorkdirRoot
	}
	t.ProfileSnapshot = snapshotOf(lp.profile, t.Root)
	t.DirName = t.ID
	if t.Name == "" {
		t.Name = t.ID
	}
	if len(lp.profile.Repositories) > 0 {
		t.Repo, t.BaseBranch = lp.profile.Repositories[0].URL, lp.profile.Repositories[0].Branch
	}
	if o.Repo != "" {
		t.Repo, t.RepoGiven = o.Repo, true
	}
	if o.Branch != "" {
		t.BaseBranch, t.BaseGiven = o.Branch, true
	}
	t.Branch = "kandev/" + t.ID
	t.LaunchEnv = o.Env
	if o.IdempotencyKey != "" {
		t.Idempotency = &records.Idempotency{Key: o.IdempotencyKey, Request: requestDigest(o)}
	}
	tc, err := e.createTask(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	defer tc.release(ctx)
	ctx, stop := e.keep(ctx, tc.Held)
	defer stop()
	s, err := e.startSession(ctx, tc, t, lp, Reports{Progress: o.Progress, Warn: o.Warn, Output: o.Output})
	err = lostClaim(ctx, err)
	e.recordOutcome(ctx, tc, o, t, err)
	if t2, _, gerr := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, t.ID); gerr == nil {
		t = t2
	}
	return t, s, err
}

func (e *Executor) agentPreset(ctx context.Context, name string) (*profiles.AgentPreset, error) {
	a, _, err := records.Get[profiles.AgentPreset](ctx, e.cfg.Store, records.KindAgent, name)
	return a, err
}

func (e *Executor) profileOf(ctx context.Context, t *records.Task) (*profiles.Profile, error) {
	p, _, err := records.Get[profiles.Profile](ctx, e.cfg.Store, records.KindProfile, t.Profile)
	return p, err
}
