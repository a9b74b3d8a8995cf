package executor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
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

// dialHost connects to a stored host, enforcing every pin.
func (e *Executor) dialHost(ctx context.Context, h *records.Host) (*ssh.Client, error) {
	t, err := e.resolveHost(ctx, h)
	if err != nil {
		return nil, err
	}
	return ssh.Dial(ctx, t, ssh.DialOptions{Pins: hostPins(h), Mode: ssh.Enforce, Timeout: e.cfg.ConnectTimeout, Debug: e.cfg.Debug, Host: h.Name})
}

// locateHelpers finds the helper binaries on this machine; tests point
// it at real builds, since a test binary is not the CLI.
var locateHelpers = sync.OnceValue(helperbin.Default)

// localPlatform is this binary's platform, as remote.NormalizePlatform
// names it.
var localPlatform = runtime.GOOS + "/" + runtime.GOARCH

// detect learns the platform and home, makes the workdir root exist and
// checks it and every directory above it and, in the same round trip,
// whether the helper this machine would upload to a host of its own
// platform is in place.
func detect(ctx context.Context, c *ssh.Client, root string) (remote.Info, error) {
	sha := ""
	if local, err := locateHelpers().Find(localPlatform, nil); err == nil {
		sha = local.SHA256
	}
	return remote.Detect(ctx, c, root, sha, localPlatform)
}

// ensureHelper uploads the helper unless detect already found it cached
// and speaking this CLI's protocol.
func (e *Executor) ensureHelper(ctx context.Context, c *ssh.Client, info remote.Info, uploading ...func(sent, total int64)) (remote.Helper, bool, error) {
	if info.Helper.Usable() {
		return info.Helper.Helper, false, nil
	}
	return e.installer().Ensure(ctx, c, info.Root, info.Platform, uploading...)
}

// installer puts helpers found on this machine in place, under this
// state directory's upload locks.
func (e *Executor) installer() remote.Installer {
	return remote.Installer{Helpers: func() *helperbin.Locator { return locateHelpers() }, LocksDir: e.locksDir}
}

// UploadProgress renders bytes sent of total for people.
func UploadProgress(sent, total int64) string {
	return fmt.Sprintf("%s (%.1f of %.1f MB)", StepUploading, float64(sent)/1e6, float64(total)/1e6)
}

// warmHelper is the helper a launch expects cached on h: the local one
// for the platform h was last seen with, this machine's until then.
func warmHelper(h *records.Host) (sha, platform string) {
	platform = cmp.Or(h.Platform, localPlatform)
	local, err := locateHelpers().Find(platform, nil)
	if err != nil {
		return "", ""
	}
	return local.SHA256, platform
}

// notePlatform records the platform a host showed when it differs from
// the one on record, so that its next launch expects the helper built for
// it (warmHelper). It is a hint: a failed write costs that launch the
// slow path, never a wrong answer, so it does not fail this one.
func (e *Executor) notePlatform(ctx context.Context, h *records.Host, platform string) {
	if platform == h.Platform || !helperbin.Supported(platform) {
		return
	}
	_, _ = records.Mutate(context.WithoutCancel(ctx), e.cfg.Store, records.KindHost, h.Name, "host.platform", func(x *records.Host) error {
		if x.Platform == platform {
			return errSettled
		}
		x.Platform = platform
		return nil
	})
}

// openLaunch starts a launch's conversation with the helper, sending
// first (the prepare request) with the command, and reads its answer
// into res. Where the helper is cached this is the launch's one command
// (remote.WarmScript): detect, checks, helper and prepare in one round trip.
// Otherwise the markers that command printed say what to do: the helper
// is put in place (uploaded if need be, or another local copy when the
// cached one speaks another protocol) and first sent to it then. step and
// progress follow the launch's steps; the conversation is returned once
// the helper took the request, even when its answer is a failure.
func (e *Executor) openLaunch(ctx context.Context, c *ssh.Client, h *records.Host, root string, first []byte, res any,
	bound time.Duration, step *string, progress func(string)) (*remote.Conversation, remote.Info, error) {
	serving := func(cv *remote.Conversation, uploaded bool) (*remote.Conversation, error) {
		if !uploaded {
			progress(StepHelperCached)
		}
		*step = StepPreparing
		progress(*step)
		return cv, cv.Next(bound, res, nil)
	}
	var info remote.Info
	sha, platform := warmHelper(h)
	if sha == "" {
		var err error
		if info, err = detect(ctx, c, root); err != nil {
			return nil, info, err
		}
	} else {
		cv, err := remote.Converse(ctx, c, h.Name, remote.WarmScript(root, sha, platform), protocol.OpPrepare, first, probeTimeout)
		if err != nil {
			return nil, info, err
		}
		if info, err = remote.Detected(cv.KV, c.Target.Label(), sha, platform); err != nil {
			cv.Finish(probeTimeout)
			return nil, info, err
		}
		if cv.Served {
			cv, err := serving(cv, false)
			var re *remote.Error
			if !errors.As(err, &re) || re.Code != protocol.CodeProtocol {
				return cv, info, err
			}
			// A stale copy (another protocol), which did nothing: the
			// slow path passes it over for another.
			cv.Finish(probeTimeout)
			info.Helper = nil
		}
	}
	helper, uploaded, err := e.ensureHelper(ctx, c, info, func(sent, total int64) { progress(UploadProgress(sent, total)) })
	if err != nil {
		if !errors.As(err, new(*helperbin.UnsupportedPlatformError)) {
			*step = StepUploading
		}
		return nil, info, err
	}
	cv, err := remote.Converse(ctx, c, h.Name, remote.ServeScript(helper), protocol.OpPrepare, first, probeTimeout)
	if err != nil {
		return nil, info, err
	}
	if !cv.Served {
		return nil, info, fmt.Errorf("%s on %s: the helper was not started", protocol.OpPrepare, h.Name)
	}
	cv, err = serving(cv, uploaded)
	return cv, info, err
}

// startSession runs one session of t: connect, then one conversation
// with the helper (openLaunch) for the task directory, the prepare script
// and the controller. Every step's outcome lands in the records before
// the next is asked for; a session that may have a controller is never
// marked failed.
func (e *Executor) startSession(ctx context.Context, tc *taskClaim, t *records.Task, lp *launchPlan, progress func(string)) (*records.Session, error) {
	if progress == nil {
		progress = func(string) {}
	}
	s := &records.Session{ID: newID("s"), TaskID: t.ID, Host: t.Host, State: records.SessionStarting, Command: lp.command,
		OperationID: t.OperationID, StartedAt: time.Now().UTC().Truncate(time.Second), Launcher: launcher()}
	if err := e.createRecord(ctx, records.KindSession, s.ID, "session.starting", s); err != nil {
		return nil, err
	}
	step := StepConnecting
	var wd *ssh.Watchdog
	launchErr := func(err error) error {
		if wd != nil {
			// A link that died is exit 7 and says so, not a step's EOF.
			err = linkLost(wd, t.Host, err, "launching task "+t.ID, "the launch did not finish",
				fmt.Sprintf("`kandev-exec task show %s` settles it once the host answers", t.ID))
		}
		return &LaunchError{TaskID: t.ID, Host: t.Host, SessionID: s.ID, Step: step, Err: err}
	}
	fail := func(err error) (*records.Session, error) {
		e.markFailed(context.WithoutCancel(ctx), tc, s.ID, err.Error())
		s.State, s.Error = records.SessionFailed, err.Error()
		return s, launchErr(err)
	}
	if _, err := tc.update(ctx, "task.session", func(x *records.Task) error {
		x.Sessions = append(x.Sessions, s.ID)
		return nil
	}); err != nil {
		return fail(err)
	}

	progress(step)
	c, err := e.dialHost(ctx, lp.host)
	if err != nil {
		return fail(err)
	}
	defer c.Close()
	// A silent link closes the client, so no step below can hang on it.
	wd = c.StartKeepalive(e.cfg.KeepaliveInterval, e.cfg.KeepaliveDeadline)
	defer wd.Stop()

	step = StepDetecting
	progress(step)
	prep, err := e.prepareRequest(ctx, tc, t, lp)
	if err != nil {
		return fail(err)
	}
	first, err := protocol.EncodeRequest(protocol.OpPrepare, prep)
	if err != nil {
		return fail(err)
	}
	var prepared taskdir.PrepareResult
	cv, info, err := e.openLaunch(ctx, c, lp.host, t.Root, first, &prepared, stepBound(lp.profile), &step, progress)
	if cv != nil {
		defer cv.Finish(probeTimeout)
	}
	e.notePlatform(ctx, lp.host, info.Platform)
	if err != nil {
		return fail(err)
	}
	taskDir, err := e.recordPrepared(ctx, tc, t, info.Root, prepared)
	if err != nil {
		return fail(err)
	}
	runtime := map[string]string{profiles.EnvTaskID: t.ID, profiles.EnvSessionID: s.ID, profiles.EnvTaskDir: taskDir}
	defs := profiles.Assemble(runtime, lp.profile, lp.agent, lp.launch)
	env, _, err := profiles.Resolve(defs, e.vault.Reveal)
	if err != nil {
		return fail(err)
	}
	if lp.profile.PrepareScript != "" {
		step = StepPrepareScript
		progress(step)
		if err := runPrepareScript(cv, lp, taskDir, env, redactions(defs, env)); err != nil {
			return fail(err)
		}
	}
	if _, err := tc.update(ctx, "task.ready", func(x *records.Task) error {
		x.Phase, x.Error = records.PhaseReady, ""
		return nil
	}); err != nil {
		return fail(err)
	}

	step = StepStarting
	progress(step)
	token := vault.NewToken()
	if err := e.vault.SaveToken(s.ID, token); err != nil {
		return fail(err)
	}
	req := controller.StartRequest{SessionID: s.ID, TaskID: t.ID, SessionDir: sessionDirOf(taskDir, s.ID),
		TaskDir: taskDir, Shell: shellOf(lp.profile), Command: lp.command, Env: env, Token: token, Require: programOf(lp.command),
		Redact: redactions(defs, env)}
	// From here a controller may exist: recovery must ask the host.
	if _, err := e.updateSession(ctx, s.ID, "session.controller", func(x *records.Session) error {
		now := time.Now().UTC().Truncate(time.Second) // JSON times are to the second
		x.ControllerStartAt = &now
		return nil
	}); err != nil {
		return fail(err)
	}
	// The helper proves the controller answers: for this nonce, with the
	// token made here, checked here (proven).
	nonce := controller.NewNonce()
	if err := cv.Send(protocol.OpControllerStart, protocol.ControllerStart{StartRequest: req, Nonce: nonce}); err != nil {
		return fail(err)
	}
	cv.CloseInput()
	var started protocol.Started
	err = cv.Next(controllerStartBound, &started, func(p protocol.Progress) {
		if p.Step == protocol.StepProof {
			step = StepConnectingCtrl
		}
		progress(p.Step)
	})
	if err != nil {
		if startRefused(err) {
			return fail(err)
		}
		// Left starting: once this process is gone, the next command asks
		// the host (see recover.go).
		return s, launchErr(fmt.Errorf("%w (a controller may have started; the host will tell)", err))
	}
	running, err := e.updateSession(ctx, s.ID, "session.running", func(x *records.Session) error {
		x.State, x.PID, x.StartTime, x.RemotePort, x.SessionDir = records.SessionRunning, started.PID, started.StartTime, started.Port, req.SessionDir
		return nil
	})
	if err != nil {
		// Still starting in the store: settled like an interrupted launch.
		return s, launchErr(fmt.Errorf("controller pid %d started, but recording it failed: %w", started.PID, err))
	}
	s = running
	step = StepConnectingCtrl
	if err := proven(started, s.ID, token, nonce); err != nil {
		return s, launchErr(fmt.Errorf("controller pid %d on port %d started but does not answer: %w", s.PID, s.RemotePort, err))
	}
	return s, nil
}

// proven checks the controller's answer to nonce, as the helper relayed
// it: made with token, by the controller controller-start reported.
func proven(started protocol.Started, sessionID, token, nonce string) error {
	h := started.Health
	switch {
	case h == nil && started.Unproven != "":
		return errors.New(started.Unproven)
	case h == nil:
		return errors.New("the helper relayed no proof")
	case !controller.VerifyHealth(token, nonce, *h):
		return fmt.Errorf("%w: health proof does not verify", controller.ErrNotOurs)
	case h.SessionID != sessionID || h.PID != started.PID || h.StartTime != started.StartTime:
		return fmt.Errorf("%w: it proves session %s, pid %d, not session %s, pid %d", controller.ErrNotOurs, h.SessionID, h.PID, sessionID, started.PID)
	}
	return nil
}

// startRefused: the helper ran `controller start` to the end and reported
// a failure, after which no controller is left running. Anything else (a
// lost link, a killed helper) leaves that open.
func startRefused(err error) bool {
	var ee *ssh.ExitError
	var re *remote.Error
	return errors.As(err, &re) || errors.As(err, &ee) && ee.Signal == ""
}

// launcher is this process, recorded on what it creates.
func launcher() *state.Holder {
	h := state.Self()
	return &h
}

// markFailed records a session that never ran an agent, and the reason on
// its task; a session settled meanwhile by another process is left alone.
func (e *Executor) markFailed(ctx context.Context, tc *taskClaim, sessionID, msg string) {
	now := time.Now().UTC().Truncate(time.Second)
	if _, err := e.updateSession(ctx, sessionID, "session.failed", func(x *records.Session) error {
		if x.State != records.SessionStarting {
			return errSettled
		}
		x.State, x.Error, x.EndedAt = records.SessionFailed, msg, &now
		return nil
	}); err != nil {
		return
	}
	tc.update(ctx, "task.error", func(x *records.Task) error {
		x.Error = msg
		return nil
	})
}

// errSettled stops a record change that is no longer needed.
var errSettled = errors.New("already settled")

func shellOf(p *profiles.Profile) string {
	if p.Shell == "" {
		return profiles.DefaultShell
	}
	return p.Shell
}

// controllerClient reaches a session's controller through a direct-tcpip
// channel on c: nothing listens beyond the host's loopback.
func (e *Executor) controllerClient(c *ssh.Client, s *records.Session, token string) *controller.Client {
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		return c.DialContext(ctx, "tcp", addr)
	}
	return controller.NewClient(dial, s.RemotePort, token)
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

// installationID names this state directory on every host it touches
// (the ownership marker), created once.
func (e *Executor) installationID(ctx context.Context) (string, error) {
	const kind, name = state.Kind("installation"), "id"
	rec, err := e.cfg.Store.Get(ctx, kind, name)
	if errors.Is(err, state.ErrNotFound) {
		data, _ := json.Marshal(map[string]string{"id": newID("i")})
		if rec, err = e.cfg.Store.Create(ctx, kind, name, data, state.Event{Type: "installation.created"}); err != nil {
			// Another process may have created it first: read theirs.
			if rec, err = e.cfg.Store.Get(ctx, kind, name); err != nil {
				return "", err
			}
		}
	} else if err != nil {
		return "", err
	}
	var v struct{ ID string }
	if err := json.Unmarshal(rec.Data, &v); err != nil || v.ID == "" {
		return "", fmt.Errorf("installation id: corrupt record in the state store")
	}
	return v.ID, nil
}
