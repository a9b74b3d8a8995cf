package executor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/mux"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// Connection reuse, when the ssh config asks for it (ControlMaster,
// ControlPath and ControlPersist, see sshconfig.Target.Reuse): the first
// command to a host starts its master, a background process of this
// program (Config.MasterCommand) that dials the host with every pin
// checked and holds the connection on a socket under <state dir>/mux;
// that command and the next ones connect there, until the master has
// been idle for ControlPersist. When no master can serve, a command
// dials directly as without reuse. docs/architecture.md and
// docs/security.md say more.

// masterLocalTimeout bounds talking to a master: it is on this machine.
const masterLocalTimeout = 10 * time.Second

// dial connects to h, resolved as t: through its master when reuse is
// on and one serves or can be started, directly otherwise.
func (e *Executor) dial(ctx context.Context, h *records.Host, t *sshconfig.Target) (*ssh.Client, error) {
	if t.Reuse && e.cfg.MasterCommand != nil {
		c, err := e.viaMaster(ctx, h, t)
		if err == nil {
			e.debugf("reusing the connection of host %s's master", h.Name)
			return c, nil
		}
		e.debugf("%v; dialling host %s directly", err, h.Name)
	}
	return ssh.Dial(ctx, t, e.dialOptions(h, ssh.Enforce))
}

func (e *Executor) viaMaster(ctx context.Context, h *records.Host, t *sshconfig.Target) (*ssh.Client, error) {
	sock, err := e.masterSocket(h, t)
	if err != nil {
		return nil, err
	}
	c, err := mux.Dial(ctx, sock, t, masterLocalTimeout)
	if err == nil || !mux.IsStale(err) {
		return c, err
	}
	if err := e.startMaster(h.Name, e.masterStartBound(t)); err != nil {
		return nil, err
	}
	e.debugf("started host %s's connection-reuse master: it dialled, its log says how", h.Name)
	return mux.Dial(ctx, sock, t, masterLocalTimeout)
}

// masterSocket is the socket of h's master for t: named after everything
// the connection depends on, so that new pins or a new route never reach
// a master dialled with the old ones.
func (e *Executor) masterSocket(h *records.Host, t *sshconfig.Target) (string, error) {
	dir, err := e.localDir("mux")
	if err != nil {
		return "", err
	}
	var id []string
	for _, hop := range t.Hops() {
		id = append(id, hop.User+"@"+hop.Addr(), hop.ProxyCommand)
	}
	for _, p := range h.Pins {
		id = append(id, p.Address, p.KeyType, p.Fingerprint, p.CAFingerprint)
	}
	return mux.Socket(dir, h.Name, id...), nil
}

// masterStartBound bounds a master's start: its dial through every hop.
func (e *Executor) masterStartBound(t *sshconfig.Target) time.Duration {
	per := e.cfg.ConnectTimeout
	if per <= 0 && t.ConnectTimeout > 0 {
		per = time.Duration(t.ConnectTimeout) * time.Second
	}
	if per <= 0 {
		per = ssh.DefaultTimeout
	}
	return time.Duration(len(t.Hops()))*per + masterLocalTimeout
}

// startMaster starts host's master in its own session (a terminal's
// Ctrl-C never reaches it), writing to its log under the state
// directory, and waits at most bound for the line it writes on the pipe
// it is given as descriptor 3 once it serves (or why it cannot).
func (e *Executor) startMaster(host string, bound time.Duration) error {
	cmd, err := e.cfg.MasterCommand(host)
	if err != nil {
		return err
	}
	dir, err := e.localDir("logs")
	if err != nil {
		return err
	}
	log := filepath.Join(dir, "master-"+host+".log")
	lf, err := fsx.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = lf, lf, []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("starting the connection-reuse master of host %s: %w", host, err)
	}
	go cmd.Wait()
	r.SetReadDeadline(time.Now().Add(bound))
	line, err := bufio.NewReader(r).ReadString('\n')
	switch line = strings.TrimSpace(line); {
	case line == masterReady:
		return nil
	case line != "":
		return fmt.Errorf("the connection-reuse master of host %s did not start: %s", host, line)
	}
	return fmt.Errorf("the connection-reuse master of host %s did not start (%v); its log: %s", host, err, log)
}

// masterReady is the line a master writes once it serves.
const masterReady = "ready"

// RunMaster is host's connection-reuse master (the process startMaster
// starts): it binds the socket, dials the host with every pin checked,
// says so on ready (one line: masterReady, or why not) and serves until
// the connection ends or has been idle for ControlPersist. Its log gets
// a line when it starts and when it ends.
func (e *Executor) RunMaster(ctx context.Context, host string, ready io.WriteCloser, log io.Writer) error {
	say := func(msg string) {
		fmt.Fprintln(ready, msg)
		ready.Close()
	}
	l, c, t, err := e.masterDial(ctx, host)
	if errors.Is(err, mux.ErrRunning) {
		say(masterReady)
		return nil
	}
	if err != nil {
		say(strings.ReplaceAll(err.Error(), "\n", " "))
		return err
	}
	wd := c.StartKeepalive(e.cfg.KeepaliveInterval, e.cfg.KeepaliveDeadline)
	defer wd.Stop()
	say(masterReady)
	fmt.Fprintf(log, "%s: master of host %s (pid %d) holds its connection; ControlPersist %s\n", nowSecond().Format(time.RFC3339), host, os.Getpid(), persistText(t.ControlPersist))
	why := l.Serve(ctx, c, t.ControlPersist)
	fmt.Fprintf(log, "%s: master of host %s (pid %d) ended: %v\n", nowSecond().Format(time.RFC3339), host, os.Getpid(), why)
	return nil
}

func (e *Executor) masterDial(ctx context.Context, host string) (*mux.Listener, *ssh.Client, *sshconfig.Target, error) {
	h, _, err := e.getHost(ctx, host)
	if err != nil {
		return nil, nil, nil, err
	}
	t, err := e.resolveHost(ctx, h)
	if err != nil {
		return nil, nil, nil, err
	}
	if !t.Reuse {
		return nil, nil, nil, fmt.Errorf("the ssh config does not ask to reuse connections to host %s (ControlMaster, ControlPath and ControlPersist)", host)
	}
	sock, err := e.masterSocket(h, t)
	if err != nil {
		return nil, nil, nil, err
	}
	l, err := mux.Listen(sock)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := ssh.Dial(ctx, t, e.dialOptions(h, ssh.Enforce))
	if err != nil {
		l.Close()
		return nil, nil, nil, err
	}
	e.migrateCertPins(ctx, h, c.Observed)
	return l, c, t, nil
}

func persistText(d time.Duration) string {
	if d == 0 {
		return "yes (no idle limit)"
	}
	return d.String()
}

// DisconnectResult is what `host disconnect` did (--json).
type DisconnectResult struct {
	Name   string `json:"name"`
	Closed int    `json:"closed"` // connection-reuse masters ended
}

// CloseMasters ends host's connection-reuse masters, as `ssh -O exit`
// does OpenSSH's: each closes its connection and the commands using it.
func (e *Executor) CloseMasters(ctx context.Context, host string) (DisconnectResult, error) {
	if _, _, err := e.getHost(ctx, host); err != nil {
		return DisconnectResult{}, err
	}
	n, err := e.closeMasters(ctx, host)
	return DisconnectResult{Name: host, Closed: n}, err
}

func (e *Executor) closeMasters(ctx context.Context, host string) (int, error) {
	dir, err := e.localDir("mux")
	if err != nil {
		return 0, err
	}
	return mux.CloseHost(ctx, dir, host, masterLocalTimeout)
}

// dropMasters ends host's masters once its pins or route changed, or it
// was removed. A master it cannot end does no harm: its socket is named
// after the old pins and route, which no later command asks for, and it
// ends when idle.
func (e *Executor) dropMasters(ctx context.Context, host string) {
	if _, err := e.closeMasters(ctx, host); err != nil {
		e.debugf("closing the connection-reuse masters of host %s: %v", host, err)
	}
}

func (e *Executor) debugf(format string, a ...any) {
	if e.cfg.Debug != nil {
		fmt.Fprintf(e.cfg.Debug, "debug: "+format+"\n", a...)
	}
}
