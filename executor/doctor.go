package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/vault"
)

// Check is one doctor line.
type Check = state.Finding

// DoctorInput is what doctor looks at; nothing is dialled but the store.
type DoctorInput struct {
	StateDir  string
	SSHConfig string
	// Store is the store every command uses, or StoreErr says why it
	// could not be opened.
	Store    state.Store
	StoreErr error
	// StoreName names the store when it is not the file store in
	// StateDir (another directory, etcd): it is then checked on a line of
	// its own, and the state directory only for what stays local.
	StoreName string
}

// Doctor checks the local prerequisites and the store, one line each,
// then whatever the store says of its backend (state.Diagnoser).
func Doctor(ctx context.Context, in DoctorInput) []Check {
	checks := []Check{checkSSHClient(), checkAgent(), checkSSHConfig(ctx, in.SSHConfig), checkStateDir(ctx, in)}
	if in.StoreName != "" {
		checks = append(checks, checkStoreElsewhere(ctx, in))
	}
	checks = append(checks, checkSecretFiles(ctx, in), checkSweep(ctx, in, time.Now()), checkGit())
	var d state.Diagnoser
	if !errors.As(in.StoreErr, &d) {
		d, _ = in.Store.(state.Diagnoser)
	}
	if d != nil {
		checks = append(checks, d.Diagnose(ctx)...)
	}
	return checks
}

func checkSSHClient() Check {
	c := Check{Name: "openssh client"}
	p, err := exec.LookPath("ssh")
	if err != nil {
		c.Status, c.Detail = "warn", "no ssh in PATH: ~/.ssh/config is read by the built-in parser (Match exec unsupported)"
		return c
	}
	c.Status, c.Detail = "ok", p+" (aliases resolved with ssh -G)"
	return c
}

func checkAgent() Check {
	c := Check{Name: "ssh-agent"}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		c.Status, c.Detail = "warn", "SSH_AUTH_SOCK is not set: only unencrypted key files can be used (start ssh-agent and ssh-add your key)"
		return c
	}
	conn, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		c.Status, c.Detail = "fail", fmt.Sprintf("cannot reach the agent at %s: %v", sock, err)
		return c
	}
	defer conn.Close()
	keys, err := agent.NewClient(conn).List()
	if err != nil {
		c.Status, c.Detail = "fail", fmt.Sprintf("agent at %s does not answer: %v", sock, err)
		return c
	}
	c.Status, c.Detail = "ok", fmt.Sprintf("%s holds %d key(s)", sock, len(keys))
	if len(keys) == 0 {
		c.Status, c.Detail = "warn", sock+" holds no keys (ssh-add your key)"
	}
	return c
}

func checkSSHConfig(ctx context.Context, file string) Check {
	c := Check{Name: "ssh config"}
	where := file
	if where == "" {
		where = "~/.ssh/config"
	}
	if _, err := sshconfig.Resolve(ctx, "kandev-exec-doctor.invalid", sshconfig.Overrides{}, sshconfig.ResolveOptions{ConfigFile: file}); err != nil {
		c.Status, c.Detail = "fail", err.Error()
		return c
	}
	c.Status, c.Detail = "ok", where+" parses"
	return c
}

// uncreatable says why this process could not create dir ("" when it
// could): the nearest ancestor that exists must be a directory it may
// write and search.
func uncreatable(dir string) string {
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return p + " is not a directory"
		case err == nil:
			if err := unix.Access(p, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Sprintf("you may not write in %s (%v)", p, err)
			}
			return ""
		case !errors.Is(err, fs.ErrNotExist):
			return err.Error()
		case filepath.Dir(p) == p:
			return p + " does not exist"
		}
	}
}

func checkStateDir(ctx context.Context, in DoctorInput) Check {
	c := Check{Name: "state dir"}
	fi, err := os.Lstat(in.StateDir)
	if os.IsNotExist(err) {
		if why := uncreatable(in.StateDir); why != "" {
			c.Status, c.Detail = "fail", fmt.Sprintf("%s cannot be created: %s; create it yourself (`mkdir -p -m 700 %s`), or use another --state-dir", in.StateDir, why, in.StateDir)
			return c
		}
		c.Status, c.Detail = "ok", in.StateDir+" (will be created on first write)"
		return c
	}
	if err != nil {
		c.Status, c.Detail = "fail", err.Error()
		return c
	}
	if !fi.IsDir() {
		c.Status, c.Detail = "fail", in.StateDir+" is not a directory"
		return c
	}
	c.Status, c.Detail = "ok", in.StateDir
	if in.StoreName == "" {
		n, err := countHosts(ctx, in)
		if err != nil {
			c.Status, c.Detail = "fail", err.Error()
			return c
		}
		c.Detail = fmt.Sprintf("%s (%d host(s))", in.StateDir, n)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		c.Status, c.Detail = "warn", fmt.Sprintf("%s is mode %o; run `chmod 700 %s`", in.StateDir, fi.Mode().Perm(), in.StateDir)
	}
	return c
}

// checkStoreElsewhere reads a store that is not the state directory's.
func checkStoreElsewhere(ctx context.Context, in DoctorInput) Check {
	c := Check{Name: "store"}
	n, err := countHosts(ctx, in)
	if err != nil {
		c.Status, c.Detail = "fail", err.Error()
		return c
	}
	c.Status, c.Detail = "ok", fmt.Sprintf("%s (%d host(s))", in.StoreName, n)
	return c
}

func countHosts(ctx context.Context, in DoctorInput) (int, error) {
	if in.StoreErr != nil {
		return 0, in.StoreErr
	}
	hosts, err := in.Store.List(ctx, records.KindHost)
	return len(hosts), err
}

// checkSecretFiles reports value files no secret's record names: left
// by an interrupted `secret set`, they may hold plaintext.
func checkSecretFiles(ctx context.Context, in DoctorInput) Check {
	c := Check{Name: "secret files", Status: "ok", Detail: "no stray value files"}
	if _, err := os.Lstat(filepath.Join(in.StateDir, vault.SecretsDirName)); os.IsNotExist(err) {
		return c
	}
	if in.StoreErr != nil {
		c.Status, c.Detail = "fail", in.StoreErr.Error()
		return c
	}
	dir, strays, err := vault.New(in.StateDir, in.Store).StraySecretFiles(ctx)
	switch {
	case err != nil:
		c.Status, c.Detail = "fail", err.Error()
	case len(strays) > 0:
		c.Status = "warn"
		c.Detail = fmt.Sprintf("%d stray value file(s) in %s, left by an interrupted `secret set` (they may hold a value): %s; "+
			"the next `kandev-exec secret set NAME` or `kandev-exec secret rm NAME` of that secret removes them",
			len(strays), dir, strings.Join(strays, ", "))
	}
	return c
}

func checkGit() Check {
	out, err := exec.Command("git", "--version").Output()
	if err != nil {
		return Check{Name: "git", Status: "warn", Detail: "git not found locally (only needed on the hosts)"}
	}
	return Check{Name: "git", Status: "ok", Detail: strings.TrimSpace(string(out))}
}
