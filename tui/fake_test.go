package tui

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// fakeActions does nothing and succeeds.
type fakeActions struct{}

func (fakeActions) Cordon(context.Context, string, string) error                    { return nil }
func (fakeActions) Uncordon(context.Context, string) error                          { return nil }
func (fakeActions) Drain(context.Context, string, time.Duration) error              { return nil }
func (fakeActions) Quarantine(context.Context, string, string, time.Duration) error { return nil }
func (fakeActions) Readmit(context.Context, string, string) error                   { return nil }
func (fakeActions) Archive(context.Context, string) error                           { return nil }
func (fakeActions) Sweep(context.Context) error                                     { return nil }

// recorder notes every call, and fails those its err says.
type recorder struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (r *recorder) note(format string, a ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, a...))
	return r.err
}

func (r *recorder) Cordon(_ context.Context, h, reason string) error {
	return r.note("cordon %s %q", h, reason)
}
func (r *recorder) Uncordon(_ context.Context, h string) error { return r.note("uncordon %s", h) }
func (r *recorder) Drain(_ context.Context, h string, d time.Duration) error {
	return r.note("drain %s %s", h, d)
}
func (r *recorder) Quarantine(_ context.Context, h, reason string, ttl time.Duration) error {
	return r.note("quarantine %s %q %s", h, reason, ttl)
}
func (r *recorder) Readmit(_ context.Context, h, reason string) error {
	return r.note("readmit %s %q", h, reason)
}
func (r *recorder) Archive(_ context.Context, id string) error { return r.note("archive %s", id) }
func (r *recorder) Sweep(context.Context) error                { return r.note("sweep") }

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}
