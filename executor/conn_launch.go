package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/ssh"
)

// A launch holds one conversation with the helper for all its steps
// (docs/architecture.md, "The CLI and its helper"): it opens with the
// prepare request and ends with controller-start, whose answer says
// whether a controller may be running (startRefused) and relays its
// proof (proven). A reclaim opens its conversation the same way
// (openConversation, reclaimconn.go).

// openLaunch starts a launch's conversation with the helper, sending
// first (the prepare request) with the command, and reads its answer
// into res, within bound (openConversation). step and progress follow
// the launch's steps; the conversation is returned once the helper took
// the request, even when its answer is a failure.
func (hc *hostConn) openLaunch(ctx context.Context, root string, first []byte, res any, bound time.Duration,
	step *string, progress func(string)) (*remote.Conversation, error) {
	return hc.openConversation(ctx, root, protocol.OpPrepare, first, step, progress, func(cv *remote.Conversation) error {
		return firstAnswer(cv, res, bound, step, progress)
	})
}

// openConversation starts a conversation with the helper whose first
// request (op; first may hold more requests, one a line) leaves with the
// command, and reads the answers with read. Where the helper is cached
// this is one round trip (remote.WarmScript): detect, checks, helper and
// the first answers. Otherwise the markers that command printed say what
// to do: the helper is put in place (uploaded if need be, or another
// local copy when the cached one speaks another protocol) and first sent
// to it then. A failed upload leaves its step in step. hc.info says what
// the host showed of itself, and hc.helper is the helper that answered.
func (hc *hostConn) openConversation(ctx context.Context, root, op string, first []byte, step *string, progress func(string),
	read func(*remote.Conversation) error) (*remote.Conversation, error) {
	cv, err := hc.converseWarm(ctx, root, op, first)
	if err != nil {
		return nil, err
	}
	if cv != nil {
		progress(StepHelperCached)
		err := read(cv)
		var re *remote.Error
		if !errors.As(err, &re) || re.Code != protocol.CodeProtocol {
			if hc.info.Helper != nil { // the one the command verified and ran
				helper := hc.info.Helper.Helper
				hc.helper = &helper
			}
			return cv, err
		}
		// A stale copy (another protocol), which did nothing: the slow
		// path passes it over for another.
		cv.Finish(probeTimeout)
		hc.info.Helper = nil
	}
	return hc.converseInstalled(ctx, op, first, step, progress, read)
}

// converseWarm sends first with the conversation's one command when this
// machine has the helper the host is expected to need (warmHelper), and
// returns the conversation when a cached helper took it; nil when the
// helper must be put in place first (hc.info says what the host has).
// Without such a helper it only detects.
func (hc *hostConn) converseWarm(ctx context.Context, root, op string, first []byte) (*remote.Conversation, error) {
	sha, platform := warmHelper(hc.host)
	if sha == "" {
		return nil, hc.detect(ctx, root)
	}
	cv, err := remote.Converse(ctx, hc.c, hc.host.Name, remote.WarmScript(root, sha, platform), op, first, probeTimeout)
	if err != nil {
		return nil, err
	}
	if hc.info, err = remote.Detected(cv.KV, hc.c.Target.Label(), sha, platform); err != nil {
		cv.Finish(probeTimeout)
		return nil, err
	}
	if !cv.Served {
		return nil, nil
	}
	return cv, nil
}

// converseInstalled puts the helper in place, then starts it with first.
// A failed upload is the uploading step's (an unsupported platform or a
// noexec root is not: nothing was sent).
func (hc *hostConn) converseInstalled(ctx context.Context, op string, first []byte, step *string, progress func(string),
	read func(*remote.Conversation) error) (*remote.Conversation, error) {
	helper, uploaded, err := hc.ensureHelper(ctx, func(sent, total int64) { progress(UploadProgress(sent, total)) })
	if err != nil {
		if !errors.As(err, new(*helperbin.UnsupportedPlatformError)) && !errors.As(err, new(*remote.NoexecError)) {
			*step = StepUploading
		}
		return nil, err
	}
	cv, err := remote.Converse(ctx, hc.c, hc.host.Name, remote.ServeScript(helper), op, first, probeTimeout)
	if err != nil {
		return nil, err
	}
	if !cv.Served {
		return nil, fmt.Errorf("%s on %s: the helper was not started", op, hc.host.Name)
	}
	if !uploaded {
		progress(StepHelperCached)
	}
	return cv, read(cv)
}

// firstAnswer reads the helper's answer to the launch's first request:
// the task directory prepared.
func firstAnswer(cv *remote.Conversation, res any, bound time.Duration, step *string, progress func(string)) error {
	*step = StepPreparing
	progress(*step)
	return cv.Next(bound, res, func(p protocol.Progress) { progress(p.Step) })
}

// startRefused: the helper ran `controller start` to the end and reported
// a failure, after which no controller is left running. Anything else (a
// lost link, a killed helper) leaves that open.
func startRefused(err error) bool {
	var ee *ssh.ExitError
	var re *remote.Error
	return errors.As(err, &re) || errors.As(err, &ee) && ee.Signal == ""
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
