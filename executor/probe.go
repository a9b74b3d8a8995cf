package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/reclaim"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/ssh"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// ErrorView is a failure inside a per-item result row.
type ErrorView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// TestResult is one row of `host test`.
type TestResult struct {
	Name              string `json:"name"`
	Address           string `json:"address"`
	Fingerprint       string `json:"fingerprint"`
	KeyType           string `json:"key_type"`
	PinnedFingerprint string `json:"pinned_fingerprint"`
	// Trust is what the host is trusted by: "pin", "ca" (CAFingerprint
	// names the CA) or "none"; MatchesPin says the key presented holds.
	Trust         string       `json:"trust"`
	CAFingerprint string       `json:"ca_fingerprint"`
	MatchesPin    bool         `json:"matches_pin"`
	Platform      string       `json:"platform"`
	Supported     bool         `json:"supported"`
	Uname         string       `json:"uname"`
	GitVersion    string       `json:"git_version"`
	Helper        string       `json:"helper"` // cached under every root in helper_roots, else needs_upload
	HelperLocal   *LocalHelper `json:"helper_local"`
	HelperMissing string       `json:"helper_missing,omitempty"` // why there is no local helper
	HelperRoots   []RootHelper `json:"helper_roots"`
	// Forwarding is "allowed" or "refused": whether the SSH server opens
	// direct-tcpip channels (without, sessions are reached through the
	// helper and `session forward` cannot work).
	Forwarding string `json:"forwarding"`
	// Requirements are what the host must have, each present or
	// missing, with the profiles that need it (requirements.go).
	Requirements []Requirement  `json:"requirements"`
	Hops         []ssh.Observed `json:"hops"`
	Error        *ErrorView     `json:"error,omitempty"`
	Err          error          `json:"-"`
}

// LocalHelper is the helper this machine would upload to the host.
type LocalHelper struct {
	Source string `json:"source"` // embedded, beside, cache or self
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256"`
}

// RootHelper is whether the helper is cached under one workdir root the
// host's tasks may use: its own, and each of its profiles' workdir_root.
type RootHelper struct {
	Root     string   `json:"root"`
	Profiles []string `json:"profiles"` // the profiles that use it; [] for the host's own root alone
	Helper   string   `json:"helper"`   // cached or needs_upload
	// Versions are the helper versions present under its bin/, by
	// sha256: those besides the current one are for `helper prune`.
	Versions []string `json:"versions"`
}

// TestHosts probes each host, at most parallel at a time, without
// trusting anything new; rows come back in the order asked. Each host is
// one connection and one command; the ssh config answers and the
// profiles are read once for all of them, as a listing reads them.
func (e *Executor) TestHosts(ctx context.Context, names []string, parallel int) []TestResult {
	if parallel < 1 {
		parallel = 1
	}
	opts := e.resolveOptions()
	opts.Cache = e.restoredLookups(opts)
	defer e.saveLookups(opts.Cache, opts)
	ps, _, psErr := records.List[profiles.Profile](ctx, e.cfg.Store, records.KindProfile)
	out := make([]TestResult, len(names))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = e.testHost(ctx, name, opts, ps, psErr)
		}()
	}
	wg.Wait()
	return out
}

func (e *Executor) testHost(ctx context.Context, name string, opts sshconfig.ResolveOptions, ps []*profiles.Profile, psErr error) TestResult {
	r := TestResult{Name: name, Hops: []ssh.Observed{}, HelperRoots: []RootHelper{}, Requirements: []Requirement{}}
	h, _, err := e.getHost(ctx, name)
	if err != nil {
		r.Err = err
		return r
	}
	t, err := e.resolveHostWith(ctx, h, opts)
	if err != nil {
		r.Err = err
		return r
	}
	r.Address = t.Addr()
	trust := targetTrust(h, t)
	r.PinnedFingerprint, r.Trust, r.CAFingerprint = trust.Fingerprint, trustKind(trust), trust.CAFingerprint
	c, err := ssh.Dial(ctx, t, e.dialOptions(h, ssh.Record))
	var de *ssh.Error
	if errors.As(err, &de) {
		r.fillKeys(de.Observed, t, trust)
	}
	if err != nil {
		r.Err = err
		return r
	}
	defer c.Close()
	r.fillKeys(c.Observed, t, trust)
	e.migrateCertPins(ctx, h, c.Observed)
	if psErr != nil {
		r.Err = psErr
		return r
	}
	roots := hostRoots(h, ps)
	if err := r.probe(ctx, c, roots, hostProfiles(h, ps)); err != nil {
		r.Err = err
	}
	return r
}

// fillKeys records what the dial saw. A key matches its trust when it is
// the pinned one, or a certificate the trusted CA signed (a dial through
// a CA that fails never gets here with the target's key accepted).
func (r *TestResult) fillKeys(obs []ssh.Observed, t *sshconfig.Target, trust records.HopPin) {
	r.Hops = append([]ssh.Observed{}, obs...)
	for _, o := range obs {
		if o.Addr == t.Addr() {
			r.Fingerprint, r.KeyType = o.Fingerprint, o.KeyType
			switch {
			case trust.CAFingerprint != "":
				r.MatchesPin = o.Cert != nil && o.Cert.CAFingerprint == trust.CAFingerprint
			case trust.Fingerprint != "":
				r.MatchesPin = o.Pin == pinOf(trust) || o.CertPinned
			}
		}
	}
}

// hostRoots lists the workdir roots h's tasks may use: its own, then
// each other one its profiles set, with the profiles using each.
func hostRoots(h *records.Host, ps []*profiles.Profile) []RootHelper {
	roots := []RootHelper{{Root: h.WorkdirRoot, Profiles: []string{}}}
	for _, p := range ps {
		if p.Host != h.Name {
			continue
		}
		root := cmp.Or(p.WorkdirRoot, h.WorkdirRoot)
		i := slices.IndexFunc(roots, func(r RootHelper) bool { return r.Root == root })
		if i < 0 {
			roots, i = append(roots, RootHelper{Root: root, Profiles: []string{}}), len(roots)
		}
		roots[i].Profiles = append(roots[i].Profiles, p.Name)
	}
	return roots
}

// probe asks the host everything in one round trip, under /bin/sh. The
// helpers present under each root are listed by content address; which
// one this host needs depends on its platform, known only from the same
// answer.
func (r *TestResult) probe(ctx context.Context, c *ssh.Client, roots []RootHelper, ps []*profiles.Profile) error {
	script := `printf 'os=%s\n' "$(uname -s)"; printf 'arch=%s\n' "$(uname -m)"; printf 'uname=%s\n' "$(uname -a)"
printf 'git=%s\n' "$(git --version 2>/dev/null)"
` + requirementsScript
	for i, root := range roots {
		bin := remote.Word(strings.TrimSuffix(root.Root, "/") + "/bin")
		script += fmt.Sprintf(`printf 'helpers%d='; for f in %s/*/kandev-exec; do [ -x "$f" ] && printf '%%s ' "$(basename "$(dirname "$f")")"; done; echo
printf 'versions%d='; for d in %s/*; do [ -e "$d" ] || [ -L "$d" ] && printf '%%s ' "$(basename "$d")"; done; echo
`, i, bin, i, bin)
	}
	ctx, cancel := withTimeout(ctx, probeTimeout)
	defer cancel()
	out, _, err := c.Run(ctx, script, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", c.Target.Label(), err)
	}
	kv := remote.Markers(out)
	r.Platform = remote.NormalizePlatform(kv["os"], kv["arch"])
	r.Supported = helperbin.Supported(r.Platform)
	r.Uname, r.GitVersion, r.Helper = kv["uname"], kv["git"], "cached"
	local, err := locateHelpers().Find(r.Platform, nil)
	if err != nil {
		r.HelperMissing = err.Error()
	} else {
		r.HelperLocal = &LocalHelper{Source: string(local.Source), Path: local.Path, SHA256: local.SHA256}
	}
	r.Forwarding = "allowed"
	var fr *ssh.ForwardingRefusedError
	if err := c.ForwardingAllowed(ctx); errors.As(err, &fr) {
		r.Forwarding = "refused"
	} else if err != nil {
		return fmt.Errorf("probe %s: %w", c.Target.Label(), err)
	}
	r.HelperRoots = roots
	r.Requirements = requirements(ctx, c, kv, ps)
	for i := range r.HelperRoots {
		r.HelperRoots[i].Versions = helperVersions(kv[fmt.Sprintf("versions%d", i)])
		r.HelperRoots[i].Helper = "needs_upload"
		if local.SHA256 != "" && slices.Contains(strings.Fields(kv[fmt.Sprintf("helpers%d", i)]), local.SHA256) {
			r.HelperRoots[i].Helper = "cached"
		}
		if r.HelperRoots[i].Helper != "cached" {
			r.Helper = "needs_upload"
		}
	}
	return nil
}

// helperVersions are the names under a bin/ that name a helper version
// (a sha256), sorted; the host's answer is not trusted to be anything.
func helperVersions(listed string) []string {
	out := []string{}
	for _, n := range strings.Fields(listed) {
		if reclaim.IsSHA256(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
