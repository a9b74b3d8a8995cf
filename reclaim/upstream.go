package reclaim

import (
	"fmt"
	"github.com/kdlbs/kandev-exec/internal/gitsafe"
	"net/url"
	"path/filepath"
	"strings"
)

// Which remotes count. "Pushed" means reachable from the current refs of
// a repository that outlives the directory: for a checkout the product
// made, the URL the task was launched with, as the local record says
// (never the checkout's own config, nor the marker, which the agent can
// rewrite); for one the agent made itself, a remote of its config that
// lies outside every task directory. A remote the agent added that
// points back into the directory (`git remote add self .`, a bare
// mirror under .kandev/) would be removed with it, so it proves nothing.

// Upstream is a repository the task was launched with: the checkout at
// Path (relative to the task directory, "." for the primary) was cloned
// from URL.
type Upstream struct {
	Path string `json:"path"`
	URL  string `json:"url"`
}

// upstreamSet is what counts for one checkout.
type upstreamSet struct {
	urls    []string // fetched for their current refs, as git fetch takes them
	ignored []string // the checkout's remotes that do not count, each with why
}

// upstreams finds what counts for the checkout at rel, whose directory
// is dir (where git resolves a relative URL from).
func upstreams(t Target, rel, dir string, cfg gitsafe.Config) upstreamSet {
	for _, u := range t.Upstreams {
		if filepath.Clean(u.Path) == rel {
			return upstreamSet{urls: []string{remoteKey(dir, u.URL)}}
		}
	}
	var up upstreamSet
	tasks := filepath.Join(t.Root, tasksDir)
	for _, r := range cfg.Remotes() {
		u, why := outsideURL(dir, tasks, r.URL)
		if why != "" {
			up.ignored = append(up.ignored, fmt.Sprintf("%s (%s)", r.Name, why))
			continue
		}
		up.urls = append(up.urls, u)
	}
	return up
}

// networkSchemes are the transports git itself speaks; any other scheme,
// and every <transport>::<address>, runs a remote helper program.
var networkSchemes = map[string]bool{"ssh": true, "git+ssh": true, "ssh+git": true, "git": true, "http": true, "https": true}

// outsideURL is raw as the fetch is to be given it, or why it does not
// count: a local path (or file:// URL) is resolved, links and all, and
// must lie outside tasks/.
func outsideURL(dir, tasks, raw string) (string, string) {
	scheme, rest := urlScheme(raw)
	switch {
	case strings.HasPrefix(rest, "::"):
		return "", "a remote helper transport"
	case !strings.HasPrefix(rest, "://"):
	case networkSchemes[strings.ToLower(scheme)]:
		return raw, ""
	case strings.EqualFold(scheme, "file"):
		u, err := url.Parse(raw)
		if err != nil || (u.Host != "" && u.Host != "localhost") {
			return "", "a file URL naming another machine"
		}
		return localOutside(u.Path, tasks)
	default:
		return "", fmt.Sprintf("transport %q", scheme)
	}
	if key := remoteKey(dir, raw); key != raw || filepath.IsAbs(raw) {
		return localOutside(key, tasks)
	}
	return raw, "" // host:path, for ssh
}

// urlScheme splits raw after its leading run of URL scheme characters,
// as git does to tell "<scheme>://" and "<helper>::" from a path.
func urlScheme(raw string) (scheme, rest string) {
	i := 0
	for i < len(raw) && (gitsafe.IsAlnum(raw[i]) || (i > 0 && strings.IndexByte("+.-", raw[i]) >= 0)) {
		i++
	}
	return raw[:i], raw[i:]
}

// localOutside resolves a local repository path. One that cannot be
// resolved is left to the fetch, whose failure keeps the directory.
func localOutside(p, tasks string) (string, string) {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	if p == tasks || strings.HasPrefix(p, tasks+"/") {
		return "", "inside the task directories, which may be removed with it"
	}
	return p, ""
}
