package reclaim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// Each CLI version puts its helper under <root>/bin/<sha256>/ and leaves
// it there. PruneHelpers removes the versions no process runs, proven on
// the host the way a task directory's removal is: every process of the
// login user inspected (a running controller has its program mapped),
// one that cannot be inspected counted as running it, nothing followed
// through a link, nothing that is not provably the login user's alone.
// Whatever it cannot tell is kept.

// HelpersRequest asks which helper versions under <root>/bin/ may go.
type HelpersRequest struct {
	Root string `json:"root"` // absolute or ~-prefixed
	// Keep names the versions kept whatever runs: the CLI's own helper.
	Keep []string `json:"keep"`
	// MinAgeSeconds keeps a version changed more recently: another
	// kandev-exec may have just put it there, to run it next.
	MinAgeSeconds int64 `json:"min_age_seconds"`
	DryRun        bool  `json:"dry_run"` // decide only; nothing is removed
}

// HelpersReport is every entry under <root>/bin/, sorted by name, with
// what was decided or done.
type HelpersReport struct {
	Root     string          `json:"root"` // physical, as the checks resolved it
	Versions []HelperVersion `json:"versions"`
}

// HelperVersion is one entry under bin/. Action is remove or keep in a
// dry run, removed, skipped or failed otherwise.
type HelperVersion struct {
	SHA256 string `json:"sha256"` // the entry's name
	Bytes  int64  `json:"bytes"`
	Action string `json:"action"`
	Reason Reason `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Reasons a helper version is kept, besides unsafe_path, not_private,
// mount_point, probe_failed, too_recent and in_use.
const (
	CurrentHelper Reason = "current" // the CLI asking uses it
	ServingHelper Reason = "serving" // the helper answering runs from it
)

// pruningPrefix names a version while it is removed: nothing starts
// from it any more, and a removal cut short is found by the next prune.
const pruningPrefix = ".pruning-"

// PruneHelpers decides, and unless DryRun removes, each helper version
// under <root>/bin/. The root and bin/ must be the login user's alone
// (a *taskdir.Error otherwise); a root or bin/ that does not exist holds
// nothing.
func PruneHelpers(ctx context.Context, req HelpersRequest) (*HelpersReport, error) {
	root, err := taskdir.PrivateRoot(req.Root)
	if err != nil {
		if abs, absent := taskdir.AbsentRoot(req.Root); absent {
			return &HelpersReport{Root: abs, Versions: []HelperVersion{}}, nil
		}
		return nil, err
	}
	h := newHost(0)
	rep := &HelpersReport{Root: root, Versions: []HelperVersion{}}
	bin := filepath.Join(root, "bin")
	if err := fsx.CheckPrivate(bin, h.uid, true); errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	} else if err != nil {
		return nil, taskdir.NotPrivate(bin, err)
	}
	d, err := openDirPath(bin)
	if err != nil {
		return nil, &taskdir.Error{Code: taskdir.CodeIO, Message: err.Error()}
	}
	defer d.close()
	names, err := d.names()
	if err != nil {
		return nil, &taskdir.Error{Code: taskdir.CodeIO, Message: err.Error()}
	}
	sort.Strings(names)
	// The helper answering is no process the checks see (they skip
	// their own): its directory, physical as the root is, stays.
	self := ""
	if exe, err := os.Executable(); err == nil {
		if phys, err := fsx.Physical(filepath.Dir(exe)); err == nil {
			self = phys
		}
	}
	for _, n := range names {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.Versions = append(rep.Versions, h.pruneHelper(ctx, d, n, req, self))
	}
	return rep, nil
}

// pruneHelper decides bin/<name> and, if it may go and this is no dry
// run, removes it.
func (h *host) pruneHelper(ctx context.Context, bin *dirFD, name string, req HelpersRequest, self string) HelperVersion {
	v := HelperVersion{SHA256: name, Action: string(Keep)}
	if !req.DryRun {
		v.Action = string(Skipped)
	}
	keep := func(r Reason, format string, a ...any) HelperVersion {
		v.Reason, v.Detail = r, fmt.Sprintf(format, a...)
		return v
	}
	path := filepath.Join(bin.path, name)
	clean := cleanName(name)
	if !IsSHA256(clean) {
		return keep(UnsafePath, "%s is not a name kandev-exec gives a helper version", path)
	}
	st, err := bin.lstat(name)
	if err != nil {
		return keep(ProbeFailed, "%v", err)
	}
	if !isDir(st) {
		return keep(UnsafePath, "%s is not a directory (a link, or a file): kandev-exec did not put it there", path)
	}
	if err := fsx.CheckPrivate(path, h.uid, true); err != nil {
		return keep(NotPrivate, "%v", err)
	}
	sub, err := bin.open(name)
	if err != nil {
		return keep(ProbeFailed, "%v", err)
	}
	tr, err := walkTree(sub)
	sub.close()
	v.Bytes = tr.bytes
	switch {
	case err != nil:
		return keep(ProbeFailed, "%v", err)
	case len(tr.mounts) > 0:
		return keep(MountPoint, "%s is another filesystem", tr.mounts[0])
	case name == clean && slices.Contains(req.Keep, name):
		return keep(CurrentHelper, "the helper this kandev-exec uses")
	case self == path:
		return keep(ServingHelper, "the helper answering runs from it")
	case tr.age(time.Now()) < req.MinAgeSeconds:
		return keep(TooRecent, "%s changed %ds ago: another kandev-exec may have just put it there", path, tr.age(time.Now()))
	}
	if r, detail := h.running(ctx, path); r != "" {
		return keep(r, "%s", detail)
	}
	if req.DryRun {
		v.Action = string(Remove)
		return v
	}
	if err := h.removeHelper(ctx, bin, name, clean); err != nil {
		var kept *keptError
		if errors.As(err, &kept) {
			return keep(kept.v.Reason, "%s", kept.v.Detail)
		}
		v.Action = string(Failed)
		return keep(RemoveFailed, "%v", err)
	}
	v.Action = string(Removed)
	return v
}

// cleanName is the version a name holds: itself, or what a removal cut
// short renamed.
func cleanName(name string) string {
	if v, ok := strings.CutPrefix(name, pruningPrefix); ok {
		return v
	}
	return name
}

// IsSHA256 reports whether s names a helper version: 64 lowercase hex
// digits, as the CLI names each one under bin/.
func IsSHA256(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

// running says why path must stay because of what runs: a process of
// the login user holds something in it, or one cannot be inspected, or
// the processes cannot be listed at all.
func (h *host) running(ctx context.Context, path string) (Reason, string) {
	users, unknown := h.inUse(ctx, path, path, nil)
	switch {
	case len(users) > 0:
		return InUse, fmt.Sprintf("%s is in use by %s", path, examples(users))
	case unknown != "":
		return InUse, fmt.Sprintf("cannot tell whether a process runs from %s: %s", path, unknown)
	}
	return "", ""
}

// removeHelper renames bin/<name> out of the way, so that nothing can
// start from it, checks again that nothing runs from it, and removes it
// without following any link. A process found at the last check gets
// the version its name back.
func (h *host) removeHelper(ctx context.Context, bin *dirFD, name, clean string) error {
	trash := pruningPrefix + clean
	if name != trash {
		if _, err := bin.lstat(trash); !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s is in the way of the removal", filepath.Join(bin.path, trash))
		}
		if err := renameNoReplace(bin.fd(), name, trash); err != nil {
			return fmt.Errorf("rename %s to %s: %w", filepath.Join(bin.path, name), trash, err)
		}
	}
	if r, detail := h.running(ctx, filepath.Join(bin.path, trash)); r != "" {
		if err := renameNoReplace(bin.fd(), trash, clean); err != nil {
			detail += fmt.Sprintf("; it could not get its name back (%v), so it stays at %s", err, filepath.Join(bin.path, trash))
		}
		return &keptError{Verdict{Action: Fail, Reason: r, Detail: detail}}
	}
	re := &removeError{}
	if !removeEntry(bin, trash, re) || re.failed() {
		return re
	}
	return nil
}
