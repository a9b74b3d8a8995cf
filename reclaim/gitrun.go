package reclaim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/gitsafe"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// How the proof runs git. The checkout is untrusted: the agent wrote its
// configuration, attributes and hooks. The login user's global and
// system configuration are the operator's, and apply. So git runs in a
// checkout pinned to its gitdir and worktree, with every setting of the
// checkout that could run a program, reach the network or hide a change
// overridden, and never with a remote: remotes are asked from outside any
// repository (remotes.go). What no override can neutralise keeps the
// directory (internal/gitsafe). docs/security.md lists it all.

// probeOverrides apply to every git run in a checkout, above whatever its
// config says.
var probeOverrides = append(append([][2]string{}, gitsafe.NoCode...), [][2]string{
	// Nothing that hides a change from status: a stale cache, a path
	// matched without regard to case or normalisation, stat data git is
	// told not to compare.
	{"core.untrackedCache", "false"},
	{"core.ignoreCase", "false"},
	{"core.precomposeUnicode", "false"},
	{"core.checkStat", "default"},
	{"core.trustctime", "true"},
	{"core.fileMode", "true"},
	// Commit ancestry read from the objects themselves, not a cache
	// file the agent could have written.
	{"core.commitGraph", "false"},
}...)

// probeEnv: no network at all (a partial clone would fetch missing
// objects through the checkout's remote, transport and credential
// settings), no grafts or replacements rewriting history, no prompt.
var probeEnv = []string{
	"GIT_ALLOW_PROTOCOL=", // an empty allow-list: no transport, whatever any config says
	"GIT_NO_LAZY_FETCH=1",
	"GIT_GRAFT_FILE=/dev/null",
	"GIT_NO_REPLACE_OBJECTS=1",
	"GIT_OPTIONAL_LOCKS=0",
	"GIT_TERMINAL_PROMPT=0",
	"LC_ALL=C",
}

const gitErrTail = 512

// repo is one checkout as the probes run git in it.
type repo struct {
	dir    string // the worktree, the directory being proven
	gitDir gitDir
	env    []string // the overrides, as configuration of command scope
}

func newRepo(dir string, g gitDir, cfg gitsafe.Config) repo {
	over := append(append([][2]string{}, probeOverrides...), cfg.FilterOverrides()...)
	env := append(append(gitsafe.Environ(), probeEnv...), gitsafe.ConfigEnv(over)...)
	return repo{dir: dir, gitDir: g, env: env}
}

// git runs one read-only git command in the checkout, pinned to its
// gitdir and worktree whatever core.worktree, core.bare or a
// config.worktree say.
func (r repo) git(ctx context.Context, h *host, stdin string, args ...string) ([]byte, error) {
	pinned := []string{"--no-pager", "--no-optional-locks", "--git-dir=" + r.gitDir.dir, "--work-tree=" + r.dir}
	return h.runGit(ctx, r.dir, r.env, stdin, pinned, args)
}

// runGit runs git in dir with env under the probe timeout and returns
// its stdout; any failure is an error (unknown). Only args are named in
// an error: the prefix says nothing the reader needs.
func (h *host) runGit(parent context.Context, dir string, env []string, stdin string, prefix, args []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(parent, h.probeTimeout)
	defer cancel()
	h.gitRuns.Add(1)
	cmd := taskdir.GroupCommand(ctx, dir, "git", append(append([]string{}, prefix...), args...)...)
	cmd.Env = env
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := h.gits.run(cmd); err != nil {
		what := taskdir.MaskURLs("git " + strings.Join(args, " "))
		switch {
		case errors.Is(parent.Err(), context.Canceled):
			return nil, fmt.Errorf("%s: the call was interrupted", what)
		case parent.Err() != nil:
			return nil, fmt.Errorf("%s: the call's time ran out", what)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s timed out after %s", what, h.probeTimeout)
		}
		tail := stderr.Bytes()
		if len(tail) > gitErrTail {
			tail = tail[len(tail)-gitErrTail:]
		}
		return nil, fmt.Errorf("%s: %v: %s", what, err, taskdir.MaskURLs(strings.TrimSpace(string(tail))))
	}
	return stdout.Bytes(), nil
}
