package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
	"github.com/kdlbs/kandev-exec/state"
)

// AddHostOptions are the settings `host add` takes.
type AddHostOptions struct {
	Name           string
	Alias          string // "" = Name, resolved like `ssh Name`
	HostName       string
	Port           int
	User           string
	IdentityFiles  []string
	IdentitiesOnly bool
	ProxyJump      string
	WorkdirRoot    string
}

// AddHost validates and stores a host. Nothing is dialled: trust is a
// separate, explicit step (`host test`, `host trust`). Adding a host that
// exists with the same settings changes nothing (created is false); with
// other settings it is a *HostExistsError naming them.
func (e *Executor) AddHost(ctx context.Context, o AddHostOptions) (v HostView, created bool, err error) {
	if err := ValidateHostName(o.Name); err != nil {
		return HostView{}, false, &sshconfig.ConfigError{Msg: err.Error()}
	}
	explicitAlias := o.Alias != ""
	if !explicitAlias {
		o.Alias = o.Name
	}
	h := &records.Host{Name: o.Name, Alias: o.Alias, HostName: o.HostName, Port: o.Port, User: o.User,
		IdentityFiles: o.IdentityFiles, IdentitiesOnly: o.IdentitiesOnly, ProxyJump: o.ProxyJump,
		WorkdirRoot: o.WorkdirRoot, Pins: []records.HopPin{}, Status: records.HostAdmitted, CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if h.WorkdirRoot == "" {
		h.WorkdirRoot = records.DefaultWorkdirRoot
	}
	if _, err := e.resolveSpec(ctx, h, explicitAlias); err != nil {
		return HostView{}, false, err
	}
	old, rec, err := e.getHost(ctx, o.Name)
	if err == nil {
		if old.SameSpec(h) {
			return e.view(ctx, old, rec), false, nil // adding the same host again changes nothing
		}
		return HostView{}, false, &HostExistsError{Name: o.Name, Differ: specDiff(old, h)}
	}
	var nf *records.NotFoundError
	if !errors.As(err, &nf) {
		return HostView{}, false, err
	}
	// Journaled without a detail, as it always has been.
	rec, err = records.Create(ctx, e.cfg.Store, records.KindHost, o.Name, h, state.Event{Type: "host.added"}, nil)
	if err != nil {
		return HostView{}, false, err
	}
	return e.view(ctx, h, rec), true, nil
}

// resolveSpec checks a host's settings before they are stored: the port
// and root are valid, the ssh config resolves them, and an alias given
// explicitly without --hostname is one the config defines.
func (e *Executor) resolveSpec(ctx context.Context, h *records.Host, explicitAlias bool) (*sshconfig.Target, error) {
	if h.Port < 0 || h.Port > 65535 {
		return nil, &sshconfig.ConfigError{Msg: fmt.Sprintf("host %q: bad port %d (1-65535)", h.Name, h.Port)}
	}
	if err := ValidateWorkdirRoot(h.WorkdirRoot); err != nil {
		return nil, &sshconfig.ConfigError{Msg: fmt.Sprintf("host %q: %v", h.Name, err)}
	}
	t, err := e.resolveHost(ctx, h)
	if err != nil {
		return nil, err
	}
	if explicitAlias && h.HostName == "" {
		defined, err := sshconfig.AliasDefined(ctx, h.Alias, e.resolveOptions())
		if err != nil {
			return nil, err
		}
		if !defined {
			where := e.cfg.SSHConfig
			if where == "" {
				where = "~/.ssh/config"
			}
			return nil, &sshconfig.ConfigError{File: where,
				Msg: fmt.Sprintf("alias %q is not defined (no Host or Match block sets anything for it); add a Host block, or use --hostname", h.Alias)}
		}
	}
	return t, nil
}

// resolveParallel bounds the `ssh -G` runs of one host listing: each is a
// short process, so a few per core keep the cores busy without a stampede.
const resolveParallel = 8

// ListHosts returns every host, sorted by name ([] when none). Resolving
// a host runs `ssh -G` for it and each of its jump hosts, so the hosts are
// resolved concurrently, resolveParallel at a time, a jump host they
// share is looked up once, and the answers serve the next listing while
// the ssh config files read the same (lookupcache.go).
func (e *Executor) ListHosts(ctx context.Context) ([]HostView, error) {
	hs, recs, err := records.List[records.Host](ctx, e.cfg.Store, records.KindHost)
	if err != nil {
		return nil, err
	}
	opts := e.resolveOptions()
	opts.Cache = e.restoredLookups(opts)
	out := make([]HostView, len(recs))
	sem := make(chan struct{}, resolveParallel)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = e.viewWith(ctx, hs[i], recs[i], opts)
		}()
	}
	wg.Wait()
	e.saveLookups(opts.Cache, opts)
	return out, nil
}

// HostNames lists host names from local state only (shell completion).
func (e *Executor) HostNames(ctx context.Context) ([]string, error) {
	recs, err := e.cfg.Store.List(ctx, records.KindHost)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(recs))
	for _, r := range recs {
		names = append(names, r.Name)
	}
	return names, nil
}

// ShowHost returns one host.
func (e *Executor) ShowHost(ctx context.Context, name string) (HostView, error) {
	h, rec, err := e.getHost(ctx, name)
	if err != nil {
		return HostView{}, err
	}
	return e.view(ctx, h, rec), nil
}

// RemoveHost forgets a host and its pins. Nothing on the host is touched.
// It is refused while profiles point at the host or tasks live on it
// (their directories would become unreachable), unless force.
func (e *Executor) RemoveHost(ctx context.Context, name string, force bool) error {
	err := removeUnused[records.Host](ctx, e.cfg.Store, records.KindHost, name, force, func(tx state.Tx) ([]string, error) {
		users, err := profilesUsing(e.cfg.Store, tx, name)
		if err != nil {
			return nil, err
		}
		tasks, err := tasksUsing(tx, "host", name, nil)
		return append(users, tasks...), err
	})
	if err == nil {
		e.dropMasters(ctx, name)
	}
	return err
}
