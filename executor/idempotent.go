package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// A launch given an idempotency key records it on its task, in the
// transaction that creates the task, so one key makes one task whatever
// the processes, machines or store. A retry with the key starts nothing:
// it waits for the launch that holds the task to end (or settles one
// that was cut short) and answers as that launch ended
// (docs/contract.md, "Idempotent launch").

// maxKeyLen bounds a key: it is stored with the task and shown by `task show`.
const maxKeyLen = 255

// LaunchAnswer is what a launch answers: its task and first session, and
// whether they come from an earlier launch with the same key.
type LaunchAnswer struct {
	Task    *records.Task
	Session *records.Session
	Reused  bool
	// Failed is how the earlier launch failed, on a reuse of one that did.
	Failed *records.LaunchOutcome
}

// KeyConflictError: an idempotency key given again with another request
// than the launch it belongs to (exit 10).
type KeyConflictError struct{ Key, TaskID string }

func (e *KeyConflictError) Error() string {
	return fmt.Sprintf("idempotency key %q belongs to task %s, launched with another request (profile, agent, command, --env, branch, name or repository differ); use a new key, or see the task: `kandev-exec task show %s`",
		e.Key, e.TaskID, e.TaskID)
}

// KeyPendingError: the launch a key belongs to was cut short and its host
// cannot tell yet whether its agent started (exit 8).
type KeyPendingError struct{ Key, TaskID string }

func (e *KeyPendingError) Error() string {
	return fmt.Sprintf("the launch with idempotency key %q (task %s) was cut short and its host cannot tell yet whether the agent started; run the same launch again in a minute, or `kandev-exec task show %s`",
		e.Key, e.TaskID, e.TaskID)
}

// keyTakenError: the create transaction found the key on another task.
type keyTakenError struct{ task *records.Task }

func (e *keyTakenError) Error() string {
	return fmt.Sprintf("idempotency key %q belongs to task %s", e.task.Idempotency.Key, e.task.ID)
}

// LaunchOnce is Launch, or with o.IdempotencyKey the answer of the launch
// that key belongs to. The answer is never nil.
func (e *Executor) LaunchOnce(ctx context.Context, o LaunchOptions) (*LaunchAnswer, error) {
	if o.IdempotencyKey == "" {
		t, s, err := e.Launch(ctx, o)
		return &LaunchAnswer{Task: t, Session: s}, err
	}
	if err := checkKey(o.IdempotencyKey); err != nil {
		return &LaunchAnswer{}, err
	}
	t, err := e.taskWithKey(ctx, o.IdempotencyKey)
	if err != nil {
		return &LaunchAnswer{}, err
	}
	if t == nil {
		nt, s, err := e.Launch(ctx, o)
		var taken *keyTakenError
		if !errors.As(err, &taken) {
			return &LaunchAnswer{Task: nt, Session: s}, err
		}
		t = taken.task // a launch with the key got there first
	}
	return e.answerAgain(ctx, t, o)
}

func checkKey(key string) error {
	if len(key) > maxKeyLen {
		return &UsageError{Msg: fmt.Sprintf("--idempotency-key is %d bytes long: at most %d", len(key), maxKeyLen)}
	}
	for _, r := range key {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return &UsageError{Msg: fmt.Sprintf("--idempotency-key %q has a space or control character: use letters, digits and punctuation", key)}
		}
	}
	return nil
}

// requestDigest identifies what a launch was asked, as given: a profile
// changed since is still the same request.
func requestDigest(o LaunchOptions) string {
	b, _ := json.Marshal([]any{o.Profile, o.Agent, o.Command, o.Env, o.Branch, o.Name, o.Repo})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// keyOwner is the part of a task record a key lookup reads.
type keyOwner struct {
	Idempotency *records.Idempotency `json:"idempotency"`
}

// checkKeyFree, in the transaction creating t, refuses a key another task
// already has.
func checkKeyFree(tx state.Tx, t *records.Task) error {
	if t.Idempotency == nil {
		return nil
	}
	recs, err := tx.List(records.KindTask)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		var k keyOwner
		if json.Unmarshal(rec.Data, &k) == nil && k.Idempotency != nil && k.Idempotency.Key == t.Idempotency.Key {
			var other records.Task
			if err := json.Unmarshal(rec.Data, &other); err != nil {
				return err
			}
			return &keyTakenError{task: &other}
		}
	}
	return nil
}

// taskWithKey is the task key belongs to, nil when none.
func (e *Executor) taskWithKey(ctx context.Context, key string) (*records.Task, error) {
	ts, _, err := records.List[records.Task](ctx, e.cfg.Store, records.KindTask)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if t.Idempotency != nil && t.Idempotency.Key == key {
			return t, nil
		}
	}
	return nil, nil
}

// answerAgain answers a launch with the key t has: once t's own launch
// has ended, as it ended.
func (e *Executor) answerAgain(ctx context.Context, t *records.Task, o LaunchOptions) (*LaunchAnswer, error) {
	if t.Idempotency.Request != requestDigest(o) {
		return &LaunchAnswer{}, &KeyConflictError{Key: o.IdempotencyKey, TaskID: t.ID}
	}
	t, err := e.settleLaunch(ctx, t.ID)
	if err != nil {
		return &LaunchAnswer{}, err
	}
	ans := &LaunchAnswer{Task: t, Reused: true}
	if len(t.Sessions) > 0 {
		if ans.Session, _, err = records.Get[records.Session](ctx, e.cfg.Store, records.KindSession, t.Sessions[0]); err != nil {
			return ans, err
		}
	}
	out := t.Idempotency.Outcome
	if out == nil {
		if out, err = settledOutcome(t, ans.Session); err != nil {
			return ans, err
		}
	}
	if out.Exit != 0 {
		ans.Failed = out
	}
	return ans, nil
}

// settleLaunch waits for the launch holding the task's claim to end, or
// settles what a launch cut short left, and returns the task then.
func (e *Executor) settleLaunch(ctx context.Context, id string) (*records.Task, error) {
	delay := 50 * time.Millisecond
	for {
		t, _, err := records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, id)
		if err != nil {
			return nil, err
		}
		if t.Idempotency.Outcome != nil {
			return t, nil
		}
		held, err := e.cfg.Store.ClaimHolder(ctx, records.KindTask, id)
		if err != nil {
			return nil, err
		}
		if held == nil {
			// Settled under its claim, unless another process took it
			// meanwhile: then it is waited for like the launch.
			if _, _, err := e.RecoverTasks(ctx, []*records.Task{t}, true); err != nil {
				return nil, err
			}
			if held, err = e.cfg.Store.ClaimHolder(ctx, records.KindTask, id); err != nil {
				return nil, err
			}
			if held == nil {
				t, _, err = records.Get[records.Task](ctx, e.cfg.Store, records.KindTask, id)
				return t, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// settledOutcome is how a launch that recorded no outcome (it was cut
// short) ended, as its settled records say: its agent started, or not.
func settledOutcome(t *records.Task, s *records.Session) (*records.LaunchOutcome, error) {
	switch {
	case s != nil && s.State == records.SessionStarting:
		return nil, &KeyPendingError{Key: t.Idempotency.Key, TaskID: t.ID}
	case s != nil && s.State != records.SessionFailed:
		return &records.LaunchOutcome{}, nil
	}
	msg := t.Error
	if msg == "" && s != nil {
		msg = s.Error
	}
	if msg == "" {
		msg = "the launch ended before its agent started"
	}
	return &records.LaunchOutcome{Exit: 1, Code: "error", Message: fmt.Sprintf("task %s: %s", t.ID, msg),
		Hint: fmt.Sprintf("`kandev-exec task show %s` says why; after fixing the cause, `kandev-exec task resume %s`", t.ID, t.ID)}, nil
}

// recordOutcome keeps how a keyed launch ended on its task, under the
// claim, before the claim is released: a retry waiting for the claim
// finds it there. An interrupted launch records none; a retry settles it.
func (e *Executor) recordOutcome(ctx context.Context, tc *taskClaim, o LaunchOptions, t *records.Task, err error) {
	if o.IdempotencyKey == "" || errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return
	}
	out := &records.LaunchOutcome{}
	if err != nil {
		out = &records.LaunchOutcome{Exit: 1, Code: "error", Message: err.Error()}
		if o.Outcome != nil {
			*out = o.Outcome(err, t)
		}
	}
	_, _ = tc.update(context.WithoutCancel(ctx), "task.launch_outcome", func(x *records.Task) error {
		x.Idempotency.Outcome = out
		return nil
	})
}
