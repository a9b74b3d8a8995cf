package reclaim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// remoteTips fetches each distinct remote URL once per call, however
// many checkouts share it: a thousand task directories of one repository
// cost one fetch (fetch.go).
type remoteTips struct {
	mu    sync.Mutex
	calls map[string]*tipsCall
}

type tipsCall struct {
	done chan struct{}
	got  *fetched
	err  error
}

// tips returns url's refs as they are now (url as upstream() resolved
// it), fetched under root. The first checkout to ask fetches; the others
// wait for that answer.
func (r *remoteTips) tips(ctx context.Context, h *host, root, url string) (*fetched, error) {
	r.mu.Lock()
	if r.calls == nil {
		r.calls = map[string]*tipsCall{}
	}
	c, asked := r.calls[url]
	if !asked {
		c = &tipsCall{done: make(chan struct{})}
		r.calls[url] = c
	}
	r.mu.Unlock()
	if !asked {
		c.got, c.err = fetchUpstream(ctx, h, root, url)
		close(c.done)
		return c.got, c.err
	}
	select {
	case <-c.done:
		return c.got, c.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the tips of %s: %v", taskdir.MaskURLs(url), ctx.Err())
	}
}

// remoteKey makes a relative local path absolute (git resolves it from
// the checkout), so that two checkouts naming "../lib.git" from
// different places are not taken for one remote. URLs and absolute
// paths are their own key.
func remoteKey(dir, url string) string {
	slash := strings.IndexByte(url, '/')
	colon := strings.IndexByte(url, ':')
	switch {
	case strings.Contains(url, "://"), colon > 0 && (slash < 0 || colon < slash), filepath.IsAbs(url):
		return url
	}
	return filepath.Join(dir, url)
}
