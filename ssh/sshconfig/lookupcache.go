package sshconfig

import (
	"context"
	"strings"
	"sync"
)

// LookupCache shares the result of identical lookups (the jump host that
// many hosts go through) among the resolutions of one command. It lives
// for one listing, never across commands, so a changed config takes
// effect at the next command. Safe for concurrent use.
type LookupCache struct {
	mu sync.Mutex
	m  map[string]*lookupResult
}

type lookupResult struct {
	done chan struct{}
	s    settings // read-only once done
	err  error
}

// NewLookupCache returns an empty cache.
func NewLookupCache() *LookupCache { return &LookupCache{m: map[string]*lookupResult{}} }

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
