// Package etcdstore is the state.Store kept in etcd, so that a team shares
// one view of hosts, profiles, tasks and cleanup jobs. Under a prefix P:
//
//	P/jctl                       the journal counter: schema, epoch, last seq
//	P/rec/<kind>/<name>          a record (state.Record as JSON)
//	P/claim/<kind>/<name>        its claim, on an etcd lease
//	P/j/<epoch>/<seq>            a journal entry (both numbers zero-padded)
//
// Every write is one etcd transaction that changes the record (or claim),
// advances the counter and puts the journal entry, on the condition that
// the counter is where the writer read it: so the journal has no gaps, an
// entry exists exactly when its change does, and a write whose reads went
// stale lands nowhere and is planned again on fresh reads.
//
// A write whose outcome is unknown (a timeout, a leader lost mid-request)
// is settled before returning: a fencing transaction moves the counter on
// if it is still where the write expected it, so the write can no longer
// land, else the journal entry at the write's sequence tells whether it
// was this write (each entry carries a random write id). A write that
// returns an error therefore changed nothing, unless the store could not
// be reached again before the call's deadline (UnreachableError.Unknown).
package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kdlbs/kandev-exec/state"
)

// DefaultTimeout bounds each Store call when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config says how to reach the store.
type Config struct {
	// Endpoints are host:port client addresses of the cluster's members.
	Endpoints []string
	// Prefix is the key prefix all of the store lives under, e.g.
	// "/kandev-exec"; two stores on one cluster need disjoint prefixes.
	Prefix string
	// TLS, when set, is how the client proves itself and checks the
	// servers; nil is plain text.
	TLS *TLSFiles
	// Username and Password log in to etcd's user authentication.
	Username string
	Password string
	// AllowPlaintext permits plain text to endpoints that are not
	// loopback addresses (anyone on the path could read and change the
	// store).
	AllowPlaintext bool
	// Timeout bounds each call, from its first request to its answer,
	// retries included; 0 means DefaultTimeout.
	Timeout time.Duration
	// Now is the clock for timestamps and claim expiry; nil is time.Now.
	Now func() time.Time
}

// Store is the etcd backend of state.Store.
type Store struct {
	cfg     Config // as opened, for Diagnose
	cli     *clientv3.Client
	name    string // etcd://host:port,.../prefix, for messages
	prefix  string // ends in "/"
	user    string
	timeout time.Duration
	now     func() time.Time
	closed  atomic.Bool
}

var (
	_ state.Store     = (*Store)(nil)
	_ state.Copier    = (*Store)(nil)
	_ state.Diagnoser = (*Store)(nil)
	_ state.Diagnoser = (*openFailure)(nil)
)

// Open connects to the cluster, checks the store's schema and creates its
// journal counter if the prefix is new. A store that cannot be reached
// within the timeout is a *state.UnreachableError; refused credentials a
// *state.AuthError; a bad configuration a *state.OpenError. The error is
// also a state.Diagnoser of the store it could not open.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	s, err := newStore(cfg)
	if err == nil {
		if _, err = s.counter(ctx); err != nil {
			s.Close()
		}
	}
	if err != nil {
		var tc *tls.Config
		if cfg.TLS != nil {
			tc, _ = cfg.TLS.clientConfig()
		}
		return nil, &openFailure{err: explain(ctx, err, cfg.Endpoints, tc), cfg: cfg}
	}
	return s, nil
}

// newStore builds the client; it sends nothing unless user auth needs a
// token.
func newStore(cfg Config) (*Store, error) {
	name := URL(cfg.Endpoints, cfg.Prefix)
	openErr := func(err error, fix string) error { return &state.OpenError{Dir: name, Err: err, Fix: fix} }
	if len(cfg.Endpoints) == 0 {
		return nil, openErr(errors.New("etcd store: no endpoints"), "give them in the store URL: etcd://host:2379[,host:2379...]/prefix")
	}
	if err := checkPrefix(cfg.Prefix); err != nil {
		return nil, openErr(err, "give a prefix such as /kandev-exec in the store URL")
	}
	if cfg.TLS == nil && !cfg.AllowPlaintext && !Loopback(cfg.Endpoints) {
		return nil, openErr(fmt.Errorf("etcd store %s: plain text to endpoints that are not loopback addresses", name),
			"configure TLS (store-ca-file, store-cert-file, store-key-file), or accept the risk with --store-insecure")
	}
	if cfg.Password != "" && cfg.Username == "" {
		return nil, openErr(fmt.Errorf("etcd store %s: a password without a user", name), "set store-user in the config file")
	}
	s := &Store{cfg: cfg, name: name, prefix: strings.TrimSuffix(cfg.Prefix, "/") + "/", user: cfg.Username, timeout: cfg.Timeout, now: cfg.Now}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.now == nil {
		s.now = time.Now
	}
	ccfg := clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: s.timeout,
		Username:    cfg.Username,
		Password:    cfg.Password,
		Logger:      zap.NewNop(),
	}
	if cfg.TLS != nil {
		tc, err := cfg.TLS.clientConfig()
		if err != nil {
			return nil, openErr(fmt.Errorf("etcd store %s: %w", name, err), "check the store-ca-file, store-cert-file and store-key-file settings")
		}
		ccfg.TLS = tc
	}
	start := time.Now()
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return nil, s.fail(context.Background(), "log in", start, err)
	}
	s.cli = cli
	return s, nil
}

// URL is the store's name: etcd://endpoints/prefix.
func URL(endpoints []string, prefix string) string {
	return "etcd://" + strings.Join(endpoints, ",") + "/" + strings.TrimPrefix(prefix, "/")
}

func checkPrefix(p string) error {
	switch {
	case p == "" || p == "/":
		return errors.New("etcd store: empty key prefix")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("etcd store: key prefix %q does not start with /", p)
	case strings.Contains(p, "//"):
		return fmt.Errorf("etcd store: key prefix %q has an empty segment", p)
	}
	return nil
}

// String is the store's URL.
func (s *Store) String() string { return s.name }

// Close releases the connection; later calls fail.
func (s *Store) Close() error {
	if s.closed.Swap(true) || s.cli == nil {
		return nil
	}
	return s.cli.Close()
}

// Locate names a record's key.
func (s *Store) Locate(kind state.Kind, name string) string {
	return "etcd key " + s.recKey(kind, name)
}

// Keys.

func (s *Store) counterKey() string { return s.prefix + "jctl" }

func (s *Store) recPrefix(kind state.Kind) string { return s.prefix + "rec/" + string(kind) + "/" }

func (s *Store) recKey(kind state.Kind, name string) string { return s.recPrefix(kind) + name }

func (s *Store) claimKey(kind state.Kind, name string) string {
	return s.prefix + "claim/" + string(kind) + "/" + name
}

func (s *Store) journalPrefix(epoch uint64) string { return fmt.Sprintf("%sj/%020d/", s.prefix, epoch) }

func (s *Store) journalKey(epoch, seq uint64) string {
	return fmt.Sprintf("%s%020d", s.journalPrefix(epoch), seq)
}
