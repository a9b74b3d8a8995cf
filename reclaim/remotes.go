package reclaim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/kdlbs/kandev-exec/internal/gitsafe"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kdlbs/kandev-exec/taskdir"
)

// remoteTips asks each distinct remote URL for its current refs once per
// call, however many checkouts share it: a thousand task directories of
// one repository cost one `git ls-remote`.
type remoteTips struct {
	mu    sync.Mutex
	calls map[string]*tipsCall
}

type tipsCall struct {
	done chan struct{}
	oids map[string]bool // every object a ref of the remote names (peeled tags too)
	err  error
}

// tips returns the objects url's refs name now (url as upstream()
// resolved it). The first checkout to ask runs ls-remote; the others
// wait for that answer.
func (r *remoteTips) tips(ctx context.Context, h *host, url string) (map[string]bool, error) {
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
		c.oids, c.err = lsRemote(ctx, h, url)
		close(c.done)
		return c.oids, c.err
	}
	select {
	case <-c.done:
		return c.oids, c.err
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

// lsRemote asks url for its refs from outside any repository (GIT_DIR
// names no repository, so git reads no checkout's configuration): the
// operator's own configuration and environment apply (credentials,
// insteadOf, ssh settings, allowed protocols), and nothing the agent
// wrote in a checkout does.
func lsRemote(ctx context.Context, h *host, url string) (map[string]bool, error) {
	if strings.HasPrefix(url, "-") {
		return nil, fmt.Errorf("remote url %q looks like an option", taskdir.MaskURLs(url))
	}
	env := append(gitsafe.Environ(), "GIT_DIR=/dev/null", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	out, err := h.runGit(ctx, "/", env, "", nil, []string{"ls-remote", "--quiet", url})
	if err != nil {
		return nil, err
	}
	return parseLsRemote(out)
}

// parseLsRemote reads "<oid>\t<ref>" lines (peeled tags as <ref>^{}).
func parseLsRemote(out []byte) (map[string]bool, error) {
	oids := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		oid, ref, ok := strings.Cut(sc.Text(), "\t")
		if !ok || !oidRE.MatchString(oid) || ref == "" {
			return nil, fmt.Errorf("git ls-remote: unexpected line %q", sc.Text())
		}
		oids[oid] = true
	}
	return oids, sc.Err()
}
