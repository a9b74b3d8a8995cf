package state

import "context"

// Finding is one line of a diagnosis, as `doctor` prints it.
type Finding struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn, fail
	Detail string `json:"detail"`
}

// Diagnoser is a store that can check its backend beyond what Store
// shows: the etcd store's endpoints, credentials, members and journal.
// It writes nothing. A store whose backend can fail that way also makes
// the error of its failed open a Diagnoser, so that what could not be
// opened can still say why.
type Diagnoser interface {
	Diagnose(ctx context.Context) []Finding
}
