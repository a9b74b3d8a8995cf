// Package state is kandev-exec's store: revisioned JSON records, claims
// that fence concurrent writers, and an append-only journal, behind one
// backend-neutral interface. FileStore keeps them in a local directory;
// state/etcdstore keeps them in etcd for a team.
//
// Every mutating call is one short transaction. On files: take the
// store's OS file lock, read, check, write atomically, append to the
// journal, unlock; no lock is ever held across network I/O.
package state

import (
	"context"
	"encoding/json"
	"time"
)

// SchemaVersion is the on-disk format written by this build. A store with a
// newer version is refused rather than misread.
const SchemaVersion = 1

// Kind names a family of records ("host", "profile", "agent", "task", ...).
// Kinds and names are single path segments: [a-z0-9][a-z0-9._-]* for kinds,
// and [A-Za-z0-9][A-Za-z0-9._-]* (at most 128 bytes) for names.
type Kind string

// Record is one stored document.
type Record struct {
	Kind          Kind            `json:"kind"`
	Name          string          `json:"name"`
	Revision      uint64          `json:"revision"` // 1 on create, +1 on every write
	SchemaVersion int             `json:"schema_version"`
	UpdatedAt     time.Time       `json:"updated_at"`
	Data          json.RawMessage `json:"data"`
}

// Event is what a write appends to the journal. Kind and Name of the
// record are filled in by the store.
type Event struct {
	Type   string          `json:"type"`             // e.g. "host.added", "task.phase"
	Detail json.RawMessage `json:"detail,omitempty"` // never secret values
}

// Entry is one journal line.
type Entry struct {
	Epoch    uint64          `json:"epoch"` // changes when the journal is re-created
	Seq      uint64          `json:"seq"`   // 1, 2, 3 ... without gaps within an epoch
	At       time.Time       `json:"at"`
	Kind     Kind            `json:"kind"`
	Name     string          `json:"name"`
	Type     string          `json:"type"`
	Revision uint64          `json:"revision"`
	Detail   json.RawMessage `json:"detail,omitempty"`
}

// Holder identifies a process holding a lock or a claim.
type Holder struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Host    string `json:"host"`
	BootID  string `json:"boot_id"`
	// Start is when the process started (Linux: clock ticks since boot),
	// which tells it from another that took its pid after it ended; 0
	// where the system does not say.
	Start uint64    `json:"start,omitempty"`
	Since time.Time `json:"since"`
}

// Claim is the right to advance one record. A new acquisition always gets
// a fresh random ID, so a previous holder's late write is recognisable.
type Claim struct {
	ID        string        `json:"id"`
	Kind      Kind          `json:"kind"`
	Name      string        `json:"name"`
	Holder    Holder        `json:"holder"`
	Seq       uint64        `json:"seq"` // last checkpoint sequence accepted
	ExpiresAt time.Time     `json:"expires_at"`
	TTL       time.Duration `json:"ttl_ns"` // what each checkpoint or renewal extends it by
}

// Tx is what a Txn's fn reads and writes through. Get and List see the
// store as of the transaction; Create, Update and Delete are checked
// against that same view when called and fail as the Store's would.
//
// A Tx makes at most one write call (a refused one included), as its
// last call: any call after it fails with ErrTxnWritten. The write is
// applied when fn returns nil. One write is all a cross-record check
// needs ("delete the host unless a profile names it", "create the task
// while its host exists"), and it keeps a crash as harmless as for a lone
// write: no transaction is ever half applied.
type Tx interface {
	Get(kind Kind, name string) (Record, error)
	List(kind Kind) ([]Record, error)
	Create(kind Kind, name string, data json.RawMessage, ev Event) (Record, error)
	Update(kind Kind, name string, expected uint64, data json.RawMessage, ev Event) (Record, error)
	Delete(kind Kind, name string, expected uint64, ev Event) error
	// CreateClaimed is Create and AcquireClaim in one write: the new
	// record is never seen unclaimed, so no other process can take it
	// over before its creator's first checkpoint (a launch's task). An
	// existing record, whatever its data, is a *ConflictError.
	CreateClaimed(kind Kind, name string, data json.RawMessage, ev Event, ttl time.Duration) (Claim, Record, error)
}

// Store is the backend-neutral API; state/statetest checks any
// implementation against it.
type Store interface {
	// Get returns ErrNotFound (wrapped in *NotFoundError) when absent,
	// and *CorruptRecordError when what is stored is not that record.
	Get(ctx context.Context, kind Kind, name string) (Record, error)
	// List returns every record of a kind sorted by name; [] when none.
	// One unreadable record fails it (*CorruptRecordError).
	List(ctx context.Context, kind Kind) ([]Record, error)
	// Create stores a new record at revision 1. Creating a record that
	// already exists with byte-identical data is a no-op returning the
	// existing record; with other data it is a *ConflictError.
	Create(ctx context.Context, kind Kind, name string, data json.RawMessage, ev Event) (Record, error)
	// Update replaces the data if the stored revision equals expected,
	// else *ConflictError. Refused (*ClaimedError) while another live
	// claim is held on the record: claimed records change by Checkpoint.
	Update(ctx context.Context, kind Kind, name string, expected uint64, data json.RawMessage, ev Event) (Record, error)
	// Delete removes the record if the stored revision equals expected.
	Delete(ctx context.Context, kind Kind, name string, expected uint64, ev Event) error
	// Discard removes a record that Get reports as *CorruptRecordError,
	// whose revision is unknown, journaled with revision 0. A readable
	// record is refused (Delete it at its revision).
	Discard(ctx context.Context, kind Kind, name string, ev Event) error
	// Locate names where a record is kept (its file, its key), for
	// messages that tell the user what to move aside.
	Locate(kind Kind, name string) string

	// Txn runs fn as one serializable transaction: the write fn makes
	// through tx lands only if nothing fn read through tx has changed
	// meanwhile, so a check made by reading ("no profile names this
	// host") still holds when the write ("delete the host") lands. fn
	// must be quick, local and free of effects outside tx: a backend may
	// run it more than once, and only the run whose write lands counts.
	// An error from fn (or from a call of tx it passes on) is returned
	// unchanged, and then nothing was written.
	//
	// The file store runs fn once, under its lock. A backend without a
	// lock, such as etcd, reads at one revision and commits the write and
	// its journal entry as one transaction comparing the journal counter,
	// which every write advances: when anything was written since fn's
	// reads, nothing lands and fn runs again on fresh reads, a bounded
	// number of times within ctx (then *ContendedError).
	Txn(ctx context.Context, fn func(tx Tx) error) error

	// AcquireClaim takes the claim on an existing record for ttl. Refused
	// with *ClaimedError while another live holder has it; an expired
	// holder loses it. On the file store a holder that is provably dead
	// (same machine and boot, pid gone) loses it too; on a shared store
	// expiry is the only proof (pids are no proof across machines or pid
	// namespaces), and the claim also lives on a server-side lease, so a
	// holder that died anywhere loses it when the lease runs out.
	AcquireClaim(ctx context.Context, kind Kind, name string, ttl time.Duration) (Claim, error)
	// Checkpoint writes data under a claim: the claim ID must be current,
	// seq must be exactly claim.Seq+1, and expected must be the stored
	// revision. Any mismatch is a *StaleClaimError or *ConflictError and
	// changes nothing. The returned claim carries the new Seq and expiry
	// (a checkpoint is proof of life: it renews the claim for its TTL).
	Checkpoint(ctx context.Context, c Claim, seq uint64, expected uint64, data json.RawMessage, ev Event) (Claim, Record, error)
	// RenewClaim extends a current, unexpired claim by its TTL without
	// writing the record or the journal: a long operation's proof of life
	// between checkpoints. Only c's ID counts (not its Seq). A claim that
	// was released, taken over or has expired is a *StaleClaimError: the
	// holder has lost it and must stop without further side effects.
	// KeepClaim runs this on a timer and reports the loss.
	RenewClaim(ctx context.Context, c Claim) (Claim, error)
	// ReleaseClaim gives the claim up; releasing a stale claim is a
	// *StaleClaimError and leaves the current holder in place.
	ReleaseClaim(ctx context.Context, c Claim) error
	// ClaimHolder returns the live claim on a record, nil when nobody
	// holds it (or there is no such record): who works on it now, read
	// without taking it, so without a journal entry. Live means as
	// AcquireClaim would judge it at this moment.
	ClaimHolder(ctx context.Context, kind Kind, name string) (*Claim, error)

	// Journal returns entries with Seq > after in the current epoch, in
	// order. Epoch reports the current epoch.
	Journal(ctx context.Context, after uint64) ([]Entry, error)
	Epoch(ctx context.Context) (uint64, error)
	// Follow waits for the journal to move past (epoch, after) and returns
	// what is new: the entries with Seq > after while epoch is current,
	// else every entry of the new epoch (the journal was re-created; the
	// entries' Epoch says so). It returns at least one entry, or ctx's
	// error when ctx ends first. The file store polls its files; etcd
	// watches the journal counter, so a follower costs nothing while
	// nothing happens.
	Follow(ctx context.Context, epoch, after uint64) ([]Entry, error)

	Close() error
}
