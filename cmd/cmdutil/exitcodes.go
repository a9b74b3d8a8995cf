package cmdutil

import (
	"context"
	"errors"
	"strings"

	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/vault"
)

// Exit is one documented way for the process to end.
type Exit struct {
	Status  int    // the process exit status
	Code    string // the JSON envelope's code
	Meaning string // as `help exit-codes` prints it
}

// The exits scripts may rely on.
var (
	ExitOK          = Exit{0, "", "success (an empty list is success)"}
	ExitError       = Exit{1, "error", "error"}
	ExitUsage       = Exit{2, "usage", "usage: bad flag, argument or file"}
	ExitPartial     = Exit{3, "partial", "partial: some hosts or items failed, others succeeded"}
	ExitTrust       = Exit{4, "trust_required", "trust required: no pinned host key (run `host test`, then `host trust`)"}
	ExitHostKey     = Exit{5, "host_key_changed", "host key changed: the host presented a key other than the pinned one (never re-pinned silently)"}
	ExitAuth        = Exit{6, "auth_failed", "authentication failed"}
	ExitUnreachable = Exit{7, "unreachable", "host unreachable: network error or timeout"}
	ExitPending     = Exit{8, "pending", "pending: work continues in the background (--detach, or a deadline reached with work left)"}
	ExitRefused     = Exit{9, "refused", "refused: the host is quarantined or cordoned"}
	ExitConflict    = Exit{10, "conflict", "conflict: environment precedence conflict, or a stale revision / claim"}
	ExitLocked      = Exit{11, "locked", "local state locked by another process, or a shared store contended by other writers, past the wait bound"}
	ExitInterrupted = Exit{130, "interrupted", "interrupted"}
)

// ExitCodes is the table `help exit-codes` prints, in order. Classify
// returns only these (or an ExitCodeError's own status).
var ExitCodes = []Exit{ExitOK, ExitError, ExitUsage, ExitPartial, ExitTrust, ExitHostKey, ExitAuth,
	ExitUnreachable, ExitPending, ExitRefused, ExitConflict, ExitLocked, ExitInterrupted, ExitToolFailed}

// exitRule sends every error that match recognises anywhere in its chain
// to exit. hint is the default next step, used when the error carries
// none of its own.
type exitRule struct {
	match func(error) bool
	exit  Exit
	hint  string
}

// exitRules is the one mapping from errors to exits. The first rule that
// matches wins, so an error that says more (a secret that could not be
// revealed) comes before what it may wrap (a locked store).
var exitRules = []exitRule{
	{is(ErrInterrupted), ExitInterrupted, ""},
	{is(context.Canceled), ExitInterrupted, ""}, // an *executor.InterruptedError too
	{as[*FlagError], ExitUsage, ""},
	{as[*ConfigError], ExitUsage, ""},
	{as[*sshconfig.ConfigError], ExitUsage, ""},
	{as[*profiles.DecodeError], ExitUsage, ""},
	{as[*executor.UsageError], ExitUsage, ""},
	{as[*records.NameError], ExitUsage, ""},
	{as[*vault.ValueError], ExitUsage, ""},
	{as[*records.AmbiguousError], ExitUsage, ""}, // its own Hint: an ID prefix or a task name
	{as[*executor.LogPositionError], ExitConflict, "read the log again without --generation (`session logs ID --json` says where it reaches)"},
	{as[*executor.NameTakenError], ExitConflict, ""},
	{as[*profiles.ConflictError], ExitConflict, "define the key in one of these origins only, or give them the same value: tier-1 origins never override each other, and a reference never loses to a different value"},
	{as[*profiles.SecretError], ExitError, "check the reference: `kandev-exec secret ls`, the variable is exported, or the file is readable"},
	{sshClass(ssh.ClassConfig), ExitUsage, ""},
	{sshClass(ssh.ClassTimeout), ExitUnreachable, ""},
	{sshClass(ssh.ClassNetwork), ExitUnreachable, ""},
	{sshClass(ssh.ClassTrustRequired), ExitTrust, ""},
	{sshClass(ssh.ClassHostKey), ExitHostKey, ""},
	{sshClass(ssh.ClassAuth), ExitAuth, ""},
	{sshClass(ssh.ClassUnknown), ExitError, ""},
	{as[*ssh.TrustRequiredError], ExitTrust, ""},
	{as[*ssh.HostKeyChangedError], ExitHostKey, ""},
	{as[*ssh.HostCertError], ExitHostKey, ""},
	{as[*ssh.HandshakeClosedError], ExitUnreachable, ""},
	{as[*ssh.ProxyCommandError], ExitUnreachable, ""},
	{as[*ssh.ForwardingRefusedError], ExitError, ""}, // its own Hint: what the server's config says
	{as[*ssh.SessionLimitError], ExitError, ""},      // its own Hint: the server's MaxSessions
	{as[*executor.FingerprintMismatchError], ExitHostKey, "the host does not present the key you were given: do not trust it until you know why"},
	{as[*ssh.NoIdentitiesError], ExitAuth, ""},
	{as[*ssh.PassphraseKeyError], ExitAuth, ""},
	{as[*ssh.LostError], ExitUnreachable, ""},
	{as[*PartialError], ExitPartial, ""},
	{as[*executor.KeptError], ExitPartial, ""},
	{as[*executor.PendingError], ExitPending, ""},
	{as[*executor.HostDrainPendingError], ExitPending, ""},
	{as[*executor.RefusedError], ExitRefused, ""},
	{as[*executor.HostStatusError], ExitRefused, ""},
	{as[*state.LockedError], ExitLocked, "wait for the other kandev-exec to finish, or raise --lock-timeout"},
	{as[*state.ContendedError], ExitLocked, "retry: other kandev-exec processes kept writing to the store (--store-timeout bounds the wait)"},
	{as[*state.UnreachableError], ExitUnreachable, "check the store's endpoints and your network: `kandev-exec doctor` checks each one"},
	{as[*state.AuthError], ExitAuth, "check the store's user, password and client certificate settings (`kandev-exec doctor`)"},
	{etcdOpenError, ExitError, "the store comes from --store, KANDEV_EXEC_STORE or the config file's store; TLS and credentials from its store-* keys"},
	{as[*state.OpenError], ExitError, "the state directory comes from --state-dir, KANDEV_EXEC_STATE_DIR or the config file's state-dir"},
	{as[*state.ConflictError], ExitConflict, "another kandev-exec changed it concurrently: re-read and retry"},
	{as[*state.StaleClaimError], ExitConflict, "another kandev-exec changed it concurrently: re-read and retry"},
	{as[*state.ClaimedError], ExitConflict, "another kandev-exec changed it concurrently: re-read and retry"},
	{as[*records.TransitionError], ExitConflict, "another kandev-exec moved it meanwhile: `kandev-exec task show` says where it stands now"},
	{as[*executor.ActiveSessionError], ExitConflict, ""},
	{as[*executor.TaskBusyError], ExitConflict, ""},
	{as[*executor.OrphanError], ExitConflict, ""},
	{as[*executor.KeyConflictError], ExitConflict, ""},
	{as[*executor.KeyPendingError], ExitPending, ""},
	{as[*executor.WaitTimeoutError], ExitPending, ""},
	{as[*executor.NoTokenError], ExitError, "follow it from the machine that launched it; from here `session logs` shows the log so far and `session stop` stops it"},
	{as[*state.UnsafePathError], ExitError, "remove the link or odd file from the state directory by hand, then retry"},
}

// ExitInfo is how an error ends the process.
type ExitInfo struct {
	Exit int
	Code string // the JSON envelope's code
	Hint string
}

// Classify is the one place errors become exit codes: an ExitCodeError's
// own status, else the first rule of exitRules that matches, else 1.
func Classify(err error) ExitInfo {
	if err == nil {
		return ExitInfo{Exit: 0}
	}
	info := ExitInfo{Exit: ExitError.Status, Code: ExitError.Code}
	var code *ExitCodeError
	if errors.As(err, &code) {
		info = ExitInfo{Exit: code.Code, Code: orDefault(code.JSON, ExitError.Code)}
	} else {
		for _, r := range exitRules {
			if r.match(err) {
				info = ExitInfo{Exit: r.exit.Status, Code: r.exit.Code, Hint: r.hint}
				break
			}
		}
	}
	var se *ssh.Error
	if info.Hint == "" && errors.As(err, &se) {
		info.Hint = se.Hint
	}
	var h *HintedError
	if info.Hint == "" && errors.As(err, &h) {
		info.Hint = h.Hint
	}
	var hinter interface{ Hint() string }
	if info.Hint == "" && errors.As(err, &hinter) {
		info.Hint = hinter.Hint()
	}
	return info
}

func as[T error](err error) bool {
	var target T
	return errors.As(err, &target)
}

// etcdOpenError: an etcd store that cannot be opened as configured.
func etcdOpenError(err error) bool {
	var oe *state.OpenError
	return errors.As(err, &oe) && strings.HasPrefix(oe.Dir, "etcd://")
}

func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func sshClass(c ssh.Class) func(error) bool {
	return func(err error) bool {
		var e *ssh.Error
		return errors.As(err, &e) && e.Class == c
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
