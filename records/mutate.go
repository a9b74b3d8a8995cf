package records

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/crashpoint"
	"github.com/kdlbs/kandev-exec/state"
)

// Every write of a host, task, session or cleanup job goes through Mutate
// (or Checkpoint, under a claim): it enforces the transition tables, and
// its journal event carries the record's Detail, so the journal alone
// says what happened. Each write, once durable, is a crash point named by
// its event (internal/crashpoint: test builds only).

// mutateAttempts bounds the retries when other writers keep winning.
const mutateAttempts = 5

// Mutate applies change to the current record and writes it back at the
// revision read, retrying when another process wrote in between: the
// store's compare-and-swap keeps every write, ours and theirs. A change
// the transition table refuses is a *TransitionError and writes nothing.
func Mutate[T any](ctx context.Context, st state.Store, kind state.Kind, name, event string, change func(*T) error) (*T, error) {
	return mutate(ctx, st, kind, name, func(v *T) state.Event { return EventFor(event, v) }, change)
}

// MutateEvent is Mutate journaled as ev rather than with the record's
// Detail: for a write whose journal entry has always said something the
// record does not (`host trust`: the key each hop got).
func MutateEvent[T any](ctx context.Context, st state.Store, kind state.Kind, name string, ev state.Event, change func(*T) error) (*T, error) {
	return mutate(ctx, st, kind, name, func(*T) state.Event { return ev }, change)
}

func mutate[T any](ctx context.Context, st state.Store, kind state.Kind, name string, eventOf func(*T) state.Event, change func(*T) error) (*T, error) {
	var lastErr error
	for range mutateAttempts {
		v, rec, err := Get[T](ctx, st, kind, name)
		if err != nil {
			return nil, err
		}
		data, err := apply(st, rec, v, change)
		if err != nil {
			return nil, err
		}
		ev := eventOf(v)
		_, err = st.Update(ctx, kind, name, rec.Revision, data, ev)
		var conflict *state.ConflictError
		if errors.As(err, &conflict) {
			lastErr = err
			continue
		}
		if err == nil {
			crashpoint.Hit(ev.Type)
		}
		return v, err
	}
	return nil, lastErr
}

// apply runs change on v (decoded from rec), checks the transition it
// makes, and encodes the result.
func apply[T any](st state.Store, rec state.Record, v *T, change func(*T) error) ([]byte, error) {
	before, err := Decode[T](st, rec)
	if err != nil {
		return nil, err
	}
	if err := change(v); err != nil {
		return nil, err
	}
	if err := checkTransition(before, v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// checkTransition holds a change to the table of its type.
func checkTransition(before, after any) error {
	switch a := after.(type) {
	case *Task:
		return checkMove(phaseMoves, "task", a.ID, before.(*Task).Phase, a.Phase)
	case *Session:
		return checkMove(sessionMoves, "session", a.ID, before.(*Session).State, a.State)
	case *Host:
		// A quarantine whose TTL ran out is already over.
		return checkMove(hostMoves, "host", a.Name, before.(*Host).EffectiveStatus(time.Now()), a.EffectiveStatus(time.Now()))
	case *CleanupJob:
		return checkMove(jobMoves, "cleanup job", a.ID, before.(*CleanupJob).State, a.State)
	}
	return nil
}

// EventFor is the journal event of a write of v: typ, and the Detail
// that v's kind carries.
func EventFor(typ string, v any) state.Event {
	return Event(typ, DetailFor(v))
}

// DetailFor is what the journal says about a record as written.
func DetailFor(v any) Detail {
	switch r := v.(type) {
	case *Task:
		d := Detail{Host: r.Host, TaskID: r.ID, Phase: string(r.Phase), Error: r.Error}
		if td := r.Teardown; td != nil {
			d.Step, d.Outcome, d.Reason = td.Step, string(td.Drain), td.Reason
			if td.Reclaim != "" {
				d.Outcome = string(td.Reclaim)
			}
			if td.Proof != nil {
				d.Proof, d.Method = td.Proof, strings.Join(td.Proof.Methods(), ",")
			}
			if n := len(td.Receipts); n > 0 {
				d.Receipt = td.Receipts[n-1]
			}
		}
		return d
	case *Session:
		return Detail{Host: r.Host, TaskID: r.TaskID, Phase: string(r.State), Error: r.Error, Observation: r.Observation, ObservedAt: r.ObservedAt}
	case *Host:
		d := Detail{Host: r.Name, Phase: string(r.Status), Reason: r.StatusReason, By: r.StatusBy, Until: r.StatusUntil}
		if dr := r.Drain; dr != nil {
			d.Step, d.Outcome, d.Message = StepHostDrain, string(dr.State), dr.Last
		}
		return d
	case *CleanupJob:
		return Detail{Host: r.Host, TaskID: r.TaskID, Phase: string(r.State), Attempts: r.Attempts, NextAt: r.NextAt, Error: r.LastError}
	case *HostDrainWorker:
		return Detail{Host: r.Name}
	}
	return Detail{}
}
