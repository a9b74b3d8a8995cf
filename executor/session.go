package executor

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/taskdir"
	"github.com/kdlbs/kandev-exec/vault"
)

// PrepareTimeout bounds clone/fetch/checkout, and the prepare script,
// unless the profile sets prepare_timeout.
var PrepareTimeout = 10 * time.Minute

func prepareTimeout(p *profiles.Profile) time.Duration {
	if d, err := time.ParseDuration(p.PrepareTimeout); err == nil && d > 0 {
		return d
	}
	return PrepareTimeout
}

// LaunchError is a launch that failed on the host after the intent was
// recorded; the task and session records say how far it got.
type LaunchError struct {
	TaskID, Host, SessionID, Step string
	Err                           error
}

func (e *LaunchError) Error() string {
	return fmt.Sprintf("task %s on %s: %s: %v", e.TaskID, e.Host, strings.ToLower(e.Step), e.Err)
}

func (e *LaunchError) Unwrap() error { return e.Err }

// startSession runs one session of t: connect, then one conversation
// with the helper (openLaunch) for the task directory, the prepare script
// and the controller. Every step's outcome lands in the records before
// the next is asked for; a session that may have a controller is never
// marked failed.
func (e *Executor) startSession(ctx context.Context, tc *taskClaim, t *records.Task, lp *launchPlan, r Reports) (*records.Session, error) {
	l := &sessionLaunch{e: e, tc: tc, t: t, lp: lp, progress: r.Progress, warn: r.Warn, output: r.Output, step: StepConnecting}
	for _, f := range []*func(string){&l.progress, &l.warn, &l.output} {
		if *f == nil {
			*f = func(string) {}
		}
	}
	if err := l.createSession(ctx); err != nil {
		return nil, err
	}
	defer l.close()
	env, err := l.prepare(ctx)
	if err != nil {
		return l.fail(ctx, interruption(ctx, l.step, err))
	}
	return l.start(ctx, env)
}

// sessionLaunch is one session's launch under way: what each step needs
// from the steps before it, and the step it is at, which a failure names.
type sessionLaunch struct {
	e        *Executor
	tc       *taskClaim
	t        *records.Task
	lp       *launchPlan
	progress func(string)
	warn     func(string)
	output   func(string)

	s    *records.Session     // as last recorded
	step string               // a Step* of launch.go
	hc   *hostConn            // once the host is reached
	cv   *remote.Conversation // once the helper took the first request
}

// launchEnv is the prepared task directory and what runs in it gets.
type launchEnv struct {
	taskDir string
	env     map[string]string
	redact  []string
}

// at moves the launch to step, and says so.
func (l *sessionLaunch) at(step string) {
	l.step = step
	l.progress(step)
}

func (l *sessionLaunch) close() {
	if l.cv != nil {
		l.cv.Finish(probeTimeout)
	}
	if l.hc != nil {
		l.hc.Close()
	}
}

// createSession records the session's intent: starting, launched by this
// process.
func (l *sessionLaunch) createSession(ctx context.Context) error {
	s := &records.Session{ID: newID("s"), TaskID: l.t.ID, Host: l.t.Host, State: records.SessionStarting, Command: l.lp.command,
		OperationID: l.t.OperationID, StartedAt: time.Now().UTC().Truncate(time.Second), Launcher: launcher()}
	if err := l.e.createRecord(ctx, records.KindSession, s.ID, "session.starting", s); err != nil {
		return err
	}
	l.s = s
	return nil
}

// fail records a session that never ran an agent (markFailed), and says
// how far the launch got.
func (l *sessionLaunch) fail(ctx context.Context, err error) (*records.Session, error) {
	if failed := l.e.markFailed(context.WithoutCancel(ctx), l.tc, l.s.ID, err.Error()); failed != nil {
		l.s = failed
	}
	return l.s, l.launchErr(err)
}

// launchErr is err at the launch's step. A link that died is exit 7 and
// says so, not a step's EOF.
func (l *sessionLaunch) launchErr(err error) error {
	if l.hc != nil {
		err = l.hc.linkLost(err, "launching task "+l.t.ID, "the launch did not finish",
			fmt.Sprintf("`kandev-exec task show %s` settles it once the host answers", l.t.ID))
	}
	return &LaunchError{TaskID: l.t.ID, Host: l.t.Host, SessionID: l.s.ID, Step: l.step, Err: err}
}

// prepare takes the launch as far as a ready task: the session named on
// its task, the host reached, the task directory made or checked, the
// environment resolved, the prepare script passed. No controller has
// been asked for yet, so a failure leaves none.
func (l *sessionLaunch) prepare(ctx context.Context) (launchEnv, error) {
	if _, err := l.tc.update(ctx, "task.session", func(x *records.Task) error {
		x.Sessions = append(x.Sessions, l.s.ID)
		return nil
	}); err != nil {
		return launchEnv{}, err
	}
	l.at(StepConnecting)
	hc, err := l.e.connect(ctx, l.lp.host)
	if err != nil {
		return launchEnv{}, err
	}
	l.hc = hc
	taskDir, err := l.prepareDir(ctx)
	if err != nil {
		return launchEnv{}, err
	}
	env, err := l.environment(taskDir)
	if err != nil {
		return launchEnv{}, err
	}
	if l.lp.profile.PrepareScript != "" {
		l.at(StepPrepareScript)
		if err := runPrepareScript(l.cv, l.lp, taskDir, env.env, env.redact, l.output); err != nil {
			return launchEnv{}, err
		}
	}
	_, err = l.tc.update(ctx, "task.ready", func(x *records.Task) error {
		x.Error = ""
		return x.Move(records.PhaseReady)
	})
	return env, err
}

// prepareDir makes or checks the task directory: the task recorded
// preparing, the prepare request sent as the helper's first (openLaunch),
// and the directory it made recorded on the task. It returns that
// directory.
func (l *sessionLaunch) prepareDir(ctx context.Context) (string, error) {
	l.at(StepDetecting)
	req, err := l.e.prepareRequest(ctx, l.tc, l.t, l.lp)
	if err != nil {
		return "", err
	}
	if req.Lookup, err = l.lookup(); err != nil {
		return "", err
	}
	first, err := protocol.EncodeRequest(protocol.OpPrepare, req)
	if err != nil {
		return "", err
	}
	progress := func(step string) {
		if step == protocol.StepProgramMissing {
			l.warn(fmt.Sprintf("agent command %q is not on %s yet (%s -l has no such program in $PATH); the prepare script may install it: it is looked up again once the script has run",
				req.Lookup.Program, l.t.Host, req.Lookup.Shell))
			return
		}
		l.progress(step)
	}
	var prepared taskdir.PrepareResult
	l.cv, err = l.hc.openLaunch(ctx, l.t.Root, first, &prepared, stepBound(l.lp.profile), &l.step, progress)
	l.hc.notePlatform(ctx)
	if err != nil {
		return "", err
	}
	return l.e.recordPrepared(ctx, l.tc, l.t, l.hc.info.Root, prepared)
}

// lookup is the agent's program as prepare looks it up before anything
// is checked out, with the environment the agent gets; nil when only the
// checkout can have it (a path inside it) or it cannot be told.
func (l *sessionLaunch) lookup() (*taskdir.ProgramLookup, error) {
	program := programOf(l.lp.command)
	if program == "" || taskdir.InCheckout(program) {
		return nil, nil
	}
	dir := l.t.TaskDir
	if dir == "" {
		dir = path.Join(l.t.Root, "tasks", l.t.DirName) // as the launch expects it
	}
	env, err := l.environment(dir)
	if err != nil {
		return nil, err
	}
	return &taskdir.ProgramLookup{Program: program, Shell: shellOf(l.lp.profile), Env: env.env,
		MayInstall: l.lp.profile.PrepareScript != ""}, nil
}

// environment resolves what the prepare script and the agent get in
// taskDir, and the secret values to mask in what comes back.
func (l *sessionLaunch) environment(taskDir string) (launchEnv, error) {
	runtime := map[string]string{profiles.EnvTaskID: l.t.ID, profiles.EnvSessionID: l.s.ID, profiles.EnvTaskDir: taskDir}
	defs := profiles.Assemble(runtime, l.lp.profile, l.lp.agent, l.lp.launch)
	env, _, err := profiles.Resolve(defs, l.e.vault.Reveal)
	if err != nil {
		return launchEnv{}, err
	}
	return launchEnv{taskDir: taskDir, env: env, redact: redactions(defs, env)}, nil
}

// start asks the helper for the session's controller, with a token made
// and kept here. Once the start is recorded as asked for, a controller
// may exist: a failure after marks the session failed only when the
// helper says none was left (startRefused); otherwise it stays starting,
// and once this process is gone the next command asks the host
// (recover.go).
func (l *sessionLaunch) start(ctx context.Context, env launchEnv) (*records.Session, error) {
	l.at(StepStarting)
	token := vault.NewToken()
	if err := l.e.vault.SaveToken(l.s.ID, token); err != nil {
		return l.fail(ctx, err)
	}
	if _, err := l.e.updateSession(ctx, l.s.ID, "session.controller", func(x *records.Session) error {
		now := time.Now().UTC().Truncate(time.Second) // JSON times are to the second
		x.ControllerStartAt = &now
		return nil
	}); err != nil {
		return l.fail(ctx, err)
	}
	// The helper has the controller prove itself: for this nonce, with
	// the token made here, checked here (proven).
	ask := protocol.ControllerStart{StartRequest: l.controllerRequest(env, token), Nonce: controller.NewNonce()}
	if err := l.cv.Send(protocol.OpControllerStart, ask); err != nil {
		return l.fail(ctx, err)
	}
	l.cv.CloseInput()
	var started protocol.Started
	if err := l.cv.Next(controllerStartBound, &started, l.startStep); err != nil {
		if startRefused(err) {
			return l.fail(ctx, err)
		}
		return l.s, l.launchErr(fmt.Errorf("%w (a controller may have started; the host will tell)", err))
	}
	return l.recordRunning(ctx, started, ask)
}

// controllerRequest is what the controller is started with.
func (l *sessionLaunch) controllerRequest(env launchEnv, token string) controller.StartRequest {
	return controller.StartRequest{SessionID: l.s.ID, TaskID: l.t.ID, SessionDir: sessionDirOf(env.taskDir, l.s.ID),
		TaskDir: env.taskDir, Shell: shellOf(l.lp.profile), Command: l.lp.command, Env: env.env, Token: token,
		Require: programOf(l.lp.command), Redact: env.redact, MaxRuntime: boundText(l.lp.maxRuntime), IdleTimeout: boundText(l.lp.idle)}
}

// boundText is a bound as the controller reads it: "" for none.
func boundText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}

// startStep follows controller-start's progress: the proof step is the
// launch's.
func (l *sessionLaunch) startStep(p protocol.Progress) {
	if p.Step == protocol.StepProof {
		l.step = StepConnectingCtrl
	}
	l.progress(p.Step)
}

// recordRunning records the controller controller-start reported, then
// checks the proof the helper relayed. A session it could not record
// stays starting: it is settled like an interrupted launch.
func (l *sessionLaunch) recordRunning(ctx context.Context, started protocol.Started, ask protocol.ControllerStart) (*records.Session, error) {
	running, err := l.e.updateSession(ctx, l.s.ID, "session.running", func(x *records.Session) error {
		x.PID, x.StartTime, x.RemotePort, x.SessionDir = started.PID, started.StartTime, started.Port, ask.SessionDir
		x.MaxRuntimeAt = started.MaxRuntimeAt
		return x.Move(records.SessionRunning)
	})
	if err != nil {
		return l.s, l.launchErr(fmt.Errorf("controller pid %d started, but recording it failed: %w", started.PID, err))
	}
	l.s = running
	l.step = StepConnectingCtrl
	if err := proven(started, l.s.ID, ask.Token, ask.Nonce); err != nil {
		return l.s, l.launchErr(fmt.Errorf("controller pid %d on port %d started but does not answer: %w", l.s.PID, l.s.RemotePort, err))
	}
	return l.s, nil
}

// launcher is this process, recorded on what it creates.
func launcher() *state.Holder {
	h := state.Self()
	return &h
}

// markFailed records a session that never ran an agent, and the reason on
// its task. It returns the session as recorded, nil when it could not
// record it: one settled meanwhile by another process is left alone.
func (e *Executor) markFailed(ctx context.Context, tc *taskClaim, sessionID, msg string) *records.Session {
	now := time.Now().UTC().Truncate(time.Second)
	s, err := e.updateSession(ctx, sessionID, "session.failed", func(x *records.Session) error {
		if x.State != records.SessionStarting {
			return errSettled
		}
		x.Error, x.EndedAt = msg, &now
		return x.Move(records.SessionFailed)
	})
	if err != nil {
		return nil
	}
	tc.update(ctx, "task.error", func(x *records.Task) error {
		x.Error = msg
		return nil
	})
	return s
}

// errSettled stops a record change that is no longer needed.
var errSettled = errors.New("already settled")

func shellOf(p *profiles.Profile) string {
	if p.Shell == "" {
		return profiles.DefaultShell
	}
	return p.Shell
}

// redactions are the revealed values of references: masked in any output
// that comes back from the host.
func redactions(defs []profiles.Definition, env map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range defs {
		if v, ok := env[d.Key]; ok && d.Ref.IsSet() && v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
