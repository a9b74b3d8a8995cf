package etcdstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kdlbs/kandev-exec/state"
)

// probeTimeout bounds each endpoint probe.
const probeTimeout = 2 * time.Second

// probe dials one endpoint and, with TLS, completes the handshake: the
// cause an RPC waiting for a connection cannot report.
func probe(ctx context.Context, ep string, tc *tls.Config) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	start := time.Now()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ep)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if tc != nil {
		host, _, _ := net.SplitHostPort(ep)
		c := tc.Clone()
		c.ServerName = host
		c.NextProtos = []string{"h2"}
		tconn := tls.Client(conn, c)
		if err := tconn.HandshakeContext(ctx); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// probeAll probes every endpoint at once, in the endpoints' order.
func probeAll(ctx context.Context, eps []string, tc *tls.Config) ([]time.Duration, []error) {
	rtts, errs := make([]time.Duration, len(eps)), make([]error, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() { rtts[i], errs[i] = probe(ctx, ep, tc) })
	}
	wg.Wait()
	return rtts, errs
}

// explain adds to an unreachable store's error what each endpoint said
// when dialled directly (refused, a certificate not trusted, ...).
func explain(ctx context.Context, err error, eps []string, tc *tls.Config) error {
	var ue *state.UnreachableError
	if !errors.As(err, &ue) {
		return err
	}
	_, errs := probeAll(ctx, eps, tc)
	var why []string
	for i, e := range errs {
		if e != nil {
			why = append(why, fmt.Sprintf("%s: %v", eps[i], e))
		}
	}
	if len(why) > 0 {
		ue.Err = fmt.Errorf("%w (%s)", ue.Err, strings.Join(why, "; "))
	}
	return err
}

// Diagnose checks the store's configuration (state.Diagnoser).
func (s *Store) Diagnose(ctx context.Context) []state.Finding { return diagnose(ctx, s.cfg) }

// openFailure is Open's error: it still diagnoses the store it could not
// open (state.Diagnoser), so doctor can say why.
type openFailure struct {
	err error
	cfg Config
}

func (e *openFailure) Error() string { return e.err.Error() }

func (e *openFailure) Unwrap() error { return e.err }

func (e *openFailure) Diagnose(ctx context.Context) []state.Finding { return diagnose(ctx, e.cfg) }

// diagnose checks a store's configuration without writing anything: each
// endpoint (connection, TLS, round trip), the credentials, read latency,
// the members' health and alarms, and the journal under the prefix. It
// dials on its own, so that it can say what an open could not.
func diagnose(ctx context.Context, cfg Config) []state.Finding {
	var out []state.Finding
	add := func(name, status, format string, a ...any) {
		out = append(out, state.Finding{Name: name, Status: status, Detail: fmt.Sprintf(format, a...)})
	}
	var tc *tls.Config
	if cfg.TLS != nil {
		var err error
		if tc, err = cfg.TLS.clientConfig(); err != nil {
			add("store tls", "fail", "%v", err)
			return out
		}
	}
	rtts, errs := probeAll(ctx, cfg.Endpoints, tc)
	var up, down []string
	for i, ep := range cfg.Endpoints {
		if errs[i] != nil {
			down = append(down, fmt.Sprintf("%s: %v", ep, errs[i]))
		} else {
			up = append(up, fmt.Sprintf("%s (%s)", ep, rtts[i].Round(10*time.Microsecond)))
		}
	}
	switch {
	case len(up) == 0:
		add("store endpoints", "fail", "none of %d answer: %s", len(cfg.Endpoints), strings.Join(down, "; "))
		return out
	case len(down) > 0:
		add("store endpoints", "warn", "%d of %d answer: %s; not: %s", len(up), len(cfg.Endpoints), strings.Join(up, ", "), strings.Join(down, "; "))
	default:
		add("store endpoints", "ok", "%s", strings.Join(up, ", "))
	}
	out = append(out, tlsFinding(cfg))

	s, err := newStore(cfg)
	if err != nil {
		add("store auth", "fail", "%v", explain(ctx, err, cfg.Endpoints, tc))
		return out
	}
	defer s.Close()
	var kv *clientv3.GetResponse
	var lat []time.Duration
	for range 5 {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, s.attemptTimeout())
		kv, err = s.cli.Get(rctx, s.counterKey())
		cancel()
		if err != nil {
			break
		}
		lat = append(lat, time.Since(start))
	}
	if err != nil {
		err = explain(ctx, s.fail(ctx, "read "+s.counterKey(), time.Now(), err), cfg.Endpoints, tc)
		add("store auth", "fail", "%v", err)
		return out
	}
	if cfg.Username != "" {
		add("store auth", "ok", "user %q reads %s", cfg.Username, s.prefix)
	} else {
		add("store auth", "ok", "no user authentication; reads %s", s.prefix)
	}
	slices.Sort(lat)
	status := "ok"
	if lat[len(lat)/2] > 250*time.Millisecond {
		status = "warn"
	}
	add("store latency", status, "linearizable read: median %s, max %s over %d", lat[len(lat)/2].Round(10*time.Microsecond),
		lat[len(lat)-1].Round(10*time.Microsecond), len(lat))
	out = append(out, s.membersFinding(ctx))
	switch {
	case len(kv.Kvs) == 0:
		add("store journal", "ok", "%s holds no store yet: the first command creates it", s.prefix)
	default:
		c, err := s.decodeCounter(kv.Kvs[0])
		if err != nil {
			add("store journal", "fail", "%v", err)
		} else {
			add("store journal", "ok", "schema %d, epoch %d, %d entries", c.SchemaVersion, c.Epoch, c.Seq)
		}
	}
	return out
}

func tlsFinding(cfg Config) state.Finding {
	f := state.Finding{Name: "store tls"}
	switch {
	case cfg.TLS == nil && Loopback(cfg.Endpoints):
		f.Status, f.Detail = "ok", "plain text, on this machine only (loopback)"
		return f
	case cfg.TLS == nil:
		f.Status, f.Detail = "warn", "plain text across the network (--store-insecure): anyone on the path can read and change the store"
		return f
	}
	ca := "the system's CAs"
	if cfg.TLS.CAFile != "" {
		ca = cfg.TLS.CAFile
	}
	f.Status, f.Detail = "ok", "servers verified against "+ca
	if cfg.TLS.CertFile == "" {
		return f
	}
	pair, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile)
	if err != nil {
		f.Status, f.Detail = "fail", err.Error()
		return f
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		f.Status, f.Detail = "fail", err.Error()
		return f
	}
	left := time.Until(leaf.NotAfter)
	f.Detail += fmt.Sprintf("; client certificate %q expires %s", leaf.Subject.CommonName, leaf.NotAfter.UTC().Format(time.DateOnly))
	switch {
	case left <= 0:
		f.Status, f.Detail = "fail", f.Detail+" (expired)"
	case left < 14*24*time.Hour:
		f.Status, f.Detail = "warn", f.Detail+fmt.Sprintf(" (in %d days: renew it)", int(left.Hours()/24))
	}
	return f
}

// membersFinding reports the cluster's members as each one sees itself:
// who leads, who does not answer, database size and raised alarms.
func (s *Store) membersFinding(ctx context.Context) state.Finding {
	f := state.Finding{Name: "store members"}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ml, err := s.cli.MemberList(ctx)
	if err != nil {
		f.Status, f.Detail = "warn", "cannot list members: "+s.fail(ctx, "list members", time.Now(), err).Error()
		return f
	}
	slices.SortFunc(ml.Members, func(a, b *etcdserverpb.Member) int { return strings.Compare(a.Name, b.Name) })
	var leader uint64
	var parts, problems []string
	for _, m := range ml.Members {
		st, err := s.memberStatus(ctx, m)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s does not answer: %v", m.Name, err))
		case len(st.Errors) > 0:
			problems = append(problems, fmt.Sprintf("%s reports %s", m.Name, strings.Join(st.Errors, "; ")))
		default:
			leader = st.Leader
			parts = append(parts, fmt.Sprintf("%s %s (db %.1f MiB)", m.Name, st.Version, float64(st.DbSize)/(1<<20)))
		}
	}
	f.Status = "ok"
	if len(problems) > 0 {
		f.Status = "warn"
	}
	if leader == 0 {
		f.Status = "fail"
		problems = append(problems, "no leader")
	}
	for _, m := range ml.Members {
		if m.ID == leader {
			parts = append(parts, "leader "+m.Name)
		}
	}
	if alarms, err := s.cli.AlarmList(ctx); err == nil {
		for _, a := range alarms.Alarms {
			f.Status = "fail"
			problems = append(problems, fmt.Sprintf("alarm %s on member %x (writes refused until an operator clears it)", a.Alarm, a.MemberID))
		}
	} else if !errors.Is(err, rpctypes.ErrPermissionDenied) {
		problems = append(problems, "cannot read alarms: "+err.Error())
	}
	f.Detail = fmt.Sprintf("%d member(s): %s", len(ml.Members), strings.Join(parts, ", "))
	if len(problems) > 0 {
		f.Detail += "; " + strings.Join(problems, "; ")
	}
	return f
}

func (s *Store) memberStatus(ctx context.Context, m *etcdserverpb.Member) (*clientv3.StatusResponse, error) {
	if len(m.ClientURLs) == 0 {
		return nil, errors.New("no client URL (not started yet?)")
	}
	ep := m.ClientURLs[0]
	ep = strings.TrimPrefix(strings.TrimPrefix(ep, "https://"), "http://")
	sctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return s.cli.Status(sctx, ep)
}
