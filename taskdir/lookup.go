package taskdir

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// CodeProgramMissing: the agent's program is not there the way the
// agent would run (its shell as a login shell, its environment).
const CodeProgramMissing = "program_missing"

// lookupTimeout bounds a lookup: a login shell's startup files can hang.
const lookupTimeout = 30 * time.Second

// ProgramLookup asks, before anything is checked out, whether the agent's
// program is there. MayInstall: a prepare script runs first and may
// install it, so a missing one is only a warning.
type ProgramLookup struct {
	Program    string            `json:"program"`
	Shell      string            `json:"shell"`
	Env        map[string]string `json:"env,omitempty"`
	MayInstall bool              `json:"may_install,omitempty"`
}

// InCheckout reports whether program names a path inside the task
// directory (`./agent.sh`, `bin/run`): only a checkout can have it.
func InCheckout(program string) bool {
	return strings.Contains(program, "/") && !strings.HasPrefix(program, "/")
}

// LookFirst runs l (nil: nothing to look up) in the login user's home, the
// task directory not checked out yet. A missing program fails, unless
// MayInstall: then missing is called and the caller goes on.
func LookFirst(ctx context.Context, l *ProgramLookup, missing func()) error {
	if l == nil || l.Program == "" || InCheckout(l.Program) {
		return nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return errorf(CodeIO, "look up agent command %q: %v", l.Program, err)
	}
	err = LookupProgram(ctx, l.Shell, home, Environ(l.Env), l.Program)
	var te *Error
	if l.MayInstall && errors.As(err, &te) && te.Code == CodeProgramMissing {
		missing()
		return nil
	}
	return err
}

// LookupProgram looks program up the way the agent will run: shell as a
// login shell, in dir, with env. A missing program is CodeProgramMissing.
func LookupProgram(ctx context.Context, shell, dir string, env []string, program string) error {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, "-l", "-c", `command -v -- "$0" >/dev/null 2>&1`, program)
	cmd.Dir, cmd.Env = dir, env
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ctx.Err() == nil:
		return errorf(CodeProgramMissing, "agent command %q not found: %s -l in %s has no such program in $PATH", program, shell, dir)
	case err != nil:
		return errorf(CodeIO, "look up agent command %q with %s -l: %v", program, shell, err)
	}
	return nil
}

// Environ is this process's environment with extra added, in key order;
// later entries win.
func Environ(extra map[string]string) []string {
	env := os.Environ()
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}
