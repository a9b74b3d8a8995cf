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

// git runs git in dir, never prompting, and returns its trimmed stdout.
// A failure carries the tail of git's stderr with URL credentials masked.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	out, tail, err := runGit(ctx, dir, args...)
	if err != nil {
		return "", gitError(ctx, dir, args, err, tail)
	}
	return out, nil
}

// gitQuery is git for read-only queries, where a non-zero exit only means
// "no"; a timeout or a git that cannot start is still an error.
func gitQuery(ctx context.Context, dir string, args ...string) (out string, ok bool, err error) {
	out, tail, err := runGit(ctx, dir, args...)
	var ee *exec.ExitError
	if err != nil && ctx.Err() == nil && errors.As(err, &ee) {
		return "", false, nil
	}
	if err != nil {
		return "", false, gitError(ctx, dir, args, err, tail)
	}
	return out, true, nil
}

func runGit(ctx context.Context, dir string, args ...string) (out, stderrTail string, err error) {
	cmd := GroupCommand(ctx, dir, "git", args...)
	// The ceiling keeps git from wandering up into an enclosing
	// repository when dir is not (yet) one of its own.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
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
