package sshconfig

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// Concurrent lookups of one key run once and all see its result; other
// keys (another name, another explicit user) are their own lookups.
func TestLookupCacheRunsEachKeyOnce(t *testing.T) {
	c := NewLookupCache()
	var runs atomic.Int32
	release := make(chan struct{})
	fill := func() (settings, error) {
		runs.Add(1)
		<-release
		return settings{"hostname": {"10.0.0.1"}}, nil
	}
	var wg sync.WaitGroup
	results := make([]string, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.get(context.Background(), lookupKey("bastion", Overrides{}), fill)
			if err == nil {
				results[i] = s.first("hostname")
			}
		}()
	}
	close(release)
	wg.Wait()
	if runs.Load() != 1 {
		t.Errorf("fill ran %d times for one key", runs.Load())
	}
	for i, r := range results {
		if r != "10.0.0.1" {
			t.Errorf("caller %d got %q", i, r)
		}
	}
	if lookupKey("bastion", Overrides{}) == lookupKey("bastion", Overrides{User: "ops"}) ||
		lookupKey("bastion", Overrides{}) == lookupKey("bastion", Overrides{viaJump: true}) {
		t.Error("explicit settings must be part of the key")
	}
}
