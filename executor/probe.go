package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kdlbs/kandev-exec/ssh"
)

// Supported remote platforms (normalised uname -s / -m).
var supportedPlatforms = map[string]bool{
	"linux/amd64": true, "linux/arm64": true, "darwin/amd64": true, "darwin/arm64": true,
}

// ErrorView is a failure inside a per-item result row.
type ErrorView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// TestResult is one row of `host test`.
type TestResult struct {
	Name              string         `json:"name"`
	Address           string         `json:"address"`
	Fingerprint       string         `json:"fingerprint"`
	KeyType           string         `json:"key_type"`
	PinnedFingerprint string         `json:"pinned_fingerprint"`
	MatchesPin        bool           `json:"matches_pin"`
	Platform          string         `json:"platform"`
	Supported         bool           `json:"supported"`
	Uname             string         `json:"uname"`
	GitVersion        string         `json:"git_version"`
	Helper            string         `json:"helper"`
	Hops              []ssh.Observed `json:"hops"`
	Error             *ErrorView     `json:"error,omitempty"`
	Err               error          `json:"-"`
}

// TestHosts probes each host, at most parallel at a time, without
// trusting anything new; rows come back in the order asked.
func (e *Executor) TestHosts(ctx context.Context, names []string, parallel int) []TestResult {
	if parallel < 1 {
		parallel = 1
	}
	out := make([]TestResult, len(names))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = e.testHost(ctx, name)
		}()
	}
	wg.Wait()
	return out
}

func (e *Executor) testHost(ctx context.Context, name string) TestResult {
	r := TestResult{Name: name, Hops: []ssh.Observed{}}
	h, _, err := e.getHost(ctx, name)
	if err != nil {
		r.Err = err
		return r
	}
	t, err := e.resolveHost(ctx, h)
	if err != nil {
		r.Err = err
		return r
	}
	r.Address = t.Addr()
	pin := targetPin(h, t)
	r.PinnedFingerprint = pin.Fingerprint
	c, err := ssh.Dial(ctx, t, ssh.DialOptions{Pins: hostPins(h), Mode: ssh.Record, Timeout: e.cfg.ConnectTimeout, Debug: e.cfg.Debug, Host: name})
	var de *ssh.Error
	if errors.As(err, &de) {
		r.fillKeys(de.Observed, t, pin)
	}
	if err != nil {
		r.Err = err
		return r
	}
	defer c.Close()
	r.fillKeys(c.Observed, t, pin)
	if err := r.probe(ctx, c, h.WorkdirRoot); err != nil {
		r.Err = err
	}
	return r
}

func (r *TestResult) fillKeys(obs []ssh.Observed, t *ssh.Target, pin ssh.Pin) {
	r.Hops = append([]ssh.Observed{}, obs...)
	for _, o := range obs {
		if o.Addr == t.Addr() {
			r.Fingerprint, r.KeyType = o.Fingerprint, o.KeyType
			r.MatchesPin = !pin.IsZero() && o.Pin == pin
		}
	}
}

// probe asks the host everything in one round trip, under /bin/sh. The
// helpers present are listed by content address; which one this host
// needs depends on its platform, known only from the same answer.
func (r *TestResult) probe(ctx context.Context, c *ssh.Client, root string) error {
	script := `printf 'os=%s\n' "$(uname -s)"; printf 'arch=%s\n' "$(uname -m)"; printf 'uname=%s\n' "$(uname -a)"
printf 'git=%s\n' "$(git --version 2>/dev/null)"
printf 'helpers='; for f in ` + RemotePath(root, "bin") + `/*/kandev-exec; do [ -x "$f" ] && printf '%s ' "$(basename "$(dirname "$f")")"; done; echo`
	ctx, cancel := withTimeout(ctx, probeTimeout)
	defer cancel()
	out, _, err := c.Run(ctx, script, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", c.Target.Label(), err)
	}
	kv := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}
	r.Platform = NormalizePlatform(kv["os"], kv["arch"])
	r.Supported = supportedPlatforms[r.Platform]
	r.Uname, r.GitVersion, r.Helper = kv["uname"], kv["git"], "needs_upload"
	if local, err := localHelper(r.Platform); err == nil {
		if sha, err := fileSHA256(local); err == nil && slices.Contains(strings.Fields(kv["helpers"]), sha) {
			r.Helper = "cached"
		}
	}
	return nil
}

// NormalizePlatform maps uname -s / -m to GOOS/GOARCH names.
func NormalizePlatform(osName, arch string) string {
	o := strings.ToLower(strings.TrimSpace(osName))
	a := strings.ToLower(strings.TrimSpace(arch))
	switch a {
	case "x86_64", "amd64":
		a = "amd64"
	case "aarch64", "arm64":
		a = "arm64"
	}
	return o + "/" + a
}

// RemotePath renders root/rel as a shell word that expands ~ through
// $HOME (a quoted ~ would not expand).
func RemotePath(root, rel string) string {
	p := strings.TrimSuffix(root, "/") + "/" + rel
	if p == "~" || strings.HasPrefix(p, "~/") {
		return `"$HOME"` + ssh.ShellQuote(strings.TrimPrefix(p, "~"))
	}
	return ssh.ShellQuote(p)
}
