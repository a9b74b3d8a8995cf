package records

import "fmt"

// moves is a table of allowed transitions between the values of one
// named type: from -> the set of states it may move to. Staying in the
// same state is never a transition and is always allowed (a record may
// change other fields without moving).
type moves[S ~string] map[S][]S

func (m moves[S]) allowed(from, to S) bool {
	if from == to {
		return true
	}
	for _, s := range m[from] {
		if s == to {
			return true
		}
	}
	return false
}

// TransitionError is a move the table refuses: a bug, or a stale local
// copy of a record (re-read it and decide again). A create in a state
// its type is never created in is one too, with no From (Create).
type TransitionError struct {
	What, ID, From, To string
	Create             bool
}

func (e *TransitionError) Error() string {
	if e.Create {
		return fmt.Sprintf("%s %s cannot be created %s", e.What, e.ID, e.To)
	}
	return fmt.Sprintf("%s %s cannot move from %s to %s", e.What, e.ID, e.From, e.To)
}

func checkMove[S ~string](m moves[S], what, id string, from, to S) error {
	if m.allowed(from, to) {
		return nil
	}
	return &TransitionError{What: what, ID: id, From: string(from), To: string(to)}
}
