package sshconfig

import (
	"context"
	"strings"
	"sync"
)

// LookupCache shares the result of identical lookups (the jump host that
// many hosts go through) among the resolutions of one command. Restore
// and Snapshot carry its answers to later commands, which reuse them
// only while the config reads exactly as it did (configDigest), so a
// changed file takes effect at the next command. Safe for concurrent use.
type LookupCache struct {
	mu     sync.Mutex
	m      map[string]*lookupResult
	digest string // the config's when Restore ran; "" keeps nothing
	fresh  int    // answers looked up by this command
}

type lookupResult struct {
	done chan struct{}
	s    settings // read-only once done
	err  error
}

// Saved is what a LookupCache keeps between commands: answers by lookup,
// valid while the config's digest is Digest.
type Saved struct {
	Digest  string                         `json:"digest"`
	Lookups map[string]map[string][]string `json:"lookups"`
}

// NewLookupCache returns an empty cache.
func NewLookupCache() *LookupCache { return &LookupCache{m: map[string]*lookupResult{}} }

// Restore, before any lookup, takes saved's answers when the config of
// opts reads as it did when they were saved.
func (c *LookupCache) Restore(saved Saved, opts ResolveOptions) {
	d, ok := configDigest(opts)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.digest = d
	if saved.Digest != d {
		return
	}
	for k, s := range saved.Lookups {
		r := &lookupResult{done: make(chan struct{}), s: settings(s)}
		close(r.done)
		c.m[k] = r
	}
}

// Snapshot returns the answers to keep once the lookups are done, the
// restored ones with the new (a changed config starts afresh): false
// when none is new, or Restore did not run, or the config is one whose
// answers are not kept or changed since Restore (an answer may be from
// either version).
func (c *LookupCache) Snapshot(opts ResolveOptions) (Saved, bool) {
	c.mu.Lock()
	digest, fresh := c.digest, c.fresh
	out := Saved{Digest: digest, Lookups: map[string]map[string][]string{}}
	for k, r := range c.m {
		select {
		case <-r.done:
			if r.err == nil && !r.s.runsCommand() {
				out.Lookups[k] = r.s.dialling()
			}
		default:
		}
	}
	c.mu.Unlock()
	if digest == "" || fresh == 0 {
		return Saved{}, false
	}
	if d, ok := configDigest(opts); !ok || d != digest {
		return Saved{}, false
	}
	return out, true
}

// get returns the settings for key, running fill once however many
// callers ask at the same time.
func (c *LookupCache) get(ctx context.Context, key string, fill func() (settings, error)) (settings, error) {
	c.mu.Lock()
	r, ok := c.m[key]
	if !ok {
		r = &lookupResult{done: make(chan struct{})}
		c.m[key] = r
	}
	c.mu.Unlock()
	if !ok {
		r.s, r.err = fill()
		c.mu.Lock()
		c.fresh++
		c.mu.Unlock()
		close(r.done)
	}
	select {
	case <-r.done:
		return r.s, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lookupKey is what a lookup depends on besides the files: the name and
// the options passed as ssh's command line.
func lookupKey(name string, ov Overrides) string {
	return strings.Join(append([]string{name}, commandLine(ov)...), "\x00")
}

// dialling is s without what resolving never reads (most of `ssh -G`'s
// output), which need not be kept.
func (s settings) dialling() map[string][]string {
	out := map[string][]string{}
	for k, v := range s {
		if used[k] || tracked[k] {
			out[k] = v
		}
	}
	return out
}

// runsCommand says s has a ProxyCommand: a command line is read from the
// config at every dial and never written anywhere, so s is not kept.
func (s settings) runsCommand() bool {
	pc := s.first("proxycommand")
	return pc != "" && !strings.EqualFold(pc, "none")
}
