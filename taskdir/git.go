package taskdir

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const gitErrTail = 1024

// MaskURLs hides the credentials of every URL in s: the user:token part
// after "://" up to its '@' (no '/', '@' or blank in it), which git may
// echo back in an error.
func MaskURLs(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		i += len("://")
		n := strings.IndexAny(s[i:], "/@ \t\n\f\r")
		if n > 0 && s[i+n] == '@' {
			b.WriteString(s[:i])
			b.WriteString("***@")
			s = s[i+n+1:]
			continue
		}
		b.WriteString(s[:i])
		s = s[i:]
	}
}

// runner runs git in one directory: plainly where the product made the
// directory and nothing else wrote it, or pinned to a checkout under the
// overrides of safegit.go.
type runner struct {
	dir string
	pin []string // global options before the command
	env []string
}

// plain is the runner of a directory nothing untrusted has written. The
// ceiling keeps git from wandering up into an enclosing repository when
// dir is not (yet) one of its own.
func plain(dir string) runner {
	return runner{dir: dir, env: append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))}
}

// run runs git, never prompting, and returns its trimmed stdout. A
// failure carries the tail of git's stderr with URL credentials masked.
func (r runner) run(ctx context.Context, args ...string) (string, error) {
	out, tail, err := r.exec(ctx, args)
	if err != nil {
		return "", gitError(ctx, r.dir, args, err, tail)
	}
	return out, nil
}

// query is run for read-only queries, where a non-zero exit only means
// "no"; a timeout or a git that cannot start is still an error.
func (r runner) query(ctx context.Context, args ...string) (out string, ok bool, err error) {
	out, tail, err := r.exec(ctx, args)
	var ee *exec.ExitError
	if err != nil && ctx.Err() == nil && errors.As(err, &ee) {
		return "", false, nil
	}
	if err != nil {
		return "", false, gitError(ctx, r.dir, args, err, tail)
	}
	return out, true, nil
}

func (r runner) exec(ctx context.Context, args []string) (out, stderrTail string, err error) {
	cmd := GroupCommand(ctx, r.dir, "git", append(append([]string{}, r.pin...), args...)...)
	cmd.Env = r.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	tail := stderr.Bytes()
	if len(tail) > gitErrTail {
		tail = tail[len(tail)-gitErrTail:]
	}
	return strings.TrimSpace(stdout.String()), strings.TrimSpace(string(tail)), err
}

func gitError(ctx context.Context, dir string, args []string, err error, tail string) *Error {
	what := MaskURLs("git " + strings.Join(args, " "))
	switch {
	case ctx.Err() != nil:
		return errorf(CodeTimeout, "%s in %s: %v", what, dir, ctx.Err())
	case errors.Is(err, exec.ErrNotFound):
		return errorf(CodeGitFailed, "git is not installed on this host (not on the login user's PATH), and the profile's repositories need it: install git there, or launch a profile without repositories (`kandev-exec host test` lists what the host lacks)")
	}
	return errorf(CodeGitFailed, "%s in %s: %v: %s", what, dir, err, MaskURLs(tail))
}
