package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/internal/hostops"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/state"
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

// remoteInfo is what one round trip learns before anything is written.
type remoteInfo struct {
	Platform string
	Home     string
	Root     string       // the workdir root, physical (no symlinks), checked
	helper   *helperState // set when the host has this machine's platform
}

// localPlatform is this binary's platform, as NormalizePlatform names it.
var localPlatform = runtime.GOOS + "/" + runtime.GOARCH

// detect learns the platform and home, makes the workdir root exist and
// checks it and every directory above it (hostcheck.go) and, in the same
// round trip, whether the helper this machine would upload to a host of
// its own platform is in place: a warm launch then needs no separate
// check.
func detect(ctx context.Context, c *ssh.Client, root string) (remoteInfo, error) {
	script := `printf 'os=%s\narch=%s\nhome=%s\n' "$(uname -s)" "$(uname -m)" "$HOME"` + "\n"
	sha := ""
	if local, err := locateHelpers().Find(localPlatform, nil); err == nil {
		sha = local.SHA256
	}
	if sha != "" {
		script += helperCheckScript(root, sha)
	} else {
		script += rootScript(root)
	}
	kv, err := runMarked(ctx, c, script)
	if err != nil {
		return remoteInfo{}, err
	}
	if kv["home"] == "" {
		return remoteInfo{}, errors.New("remote $HOME is empty")
	}
	info := remoteInfo{Platform: NormalizePlatform(kv["os"], kv["arch"]), Home: kv["home"]}
	if info.Root, err = physicalRoot(kv, c.Target.Label()); err != nil {
		return remoteInfo{}, err
	}
	if st, err := parseHelperState(kv, c.Target.Label(), sha); err == nil && sha != "" && info.Platform == localPlatform {
		info.helper = &st
	}
	return info, nil
}

// ensureHelper uploads the helper unless detect already found it cached
// and speaking this CLI's protocol.
func (e *Executor) ensureHelper(ctx context.Context, c *ssh.Client, info remoteInfo, uploading ...func(sent, total int64)) (remoteHelper, bool, error) {
	if info.helper.usable() {
		return info.helper.helper, false, nil
	}
	return e.EnsureHelper(ctx, c, info.Root, info.Platform, uploading...)
}

// startSession runs one session of t: connect, helper, task directory,
// prepare script, controller. Every step's outcome lands in the records;
// a session that may have a controller is never marked failed.
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
	info, err := detect(ctx, c, t.Root)
	if err != nil {
		return fail(err)
	}
	helper, uploaded, err := e.ensureHelper(ctx, c, info, func(sent, total int64) { progress(UploadProgress(sent, total)) })
	if err != nil {
		if !errors.As(err, new(*UnsupportedPlatformError)) {
			step = StepUploading
		}
		return fail(err)
	}
	if !uploaded {
		progress(StepHelperCached)
	}

	step = StepPreparing
	progress(step)
	taskDir, err := e.prepareTaskDir(ctx, tc, c, t, lp, helper, info)
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
		if err := e.runPrepareScript(ctx, c, t, lp, helper, taskDir, env, redactions(defs, env)); err != nil {
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
	var started controller.StartResponse
	if err := callHelperOp(ctx, c, t.Host, helper, hostops.OpControllerStart, req, &started); err != nil {
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
	progress(step)
	if _, err := e.controllerClient(c, s, token).Health(ctx); err != nil {
		return s, launchErr(fmt.Errorf("controller pid %d on port %d started but does not answer: %w", s.PID, s.RemotePort, err))
	}
	return s, nil
}

// startRefused: the helper ran `controller start` to the end and reported
// a failure, after which no controller is left running. Anything else (a
// lost link, a killed helper) leaves that open.
func startRefused(err error) bool {
	var ee *ssh.ExitError
	var re *RemoteError
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
