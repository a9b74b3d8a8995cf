package executor

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/helpertest"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/records"
)

// uploads reports whether steps include an upload of the helper.
func uploads(steps []string) bool {
	return slices.ContainsFunc(steps, func(s string) bool { return strings.HasPrefix(s, StepUploading) })
}

// plant puts a copy of bin on the host as a launch would have, under
// the fixture's root: <root>/bin/<sha256>/kandev-exec.
func (f *launchFixture) plant(t *testing.T, bin string) {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.root, "bin", helpertest.SHA256(t, bin))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, remote.HelperName), b, 0o700); err != nil {
		t.Fatal(err)
	}
}

// A launch expects the helper built for the platform the host last
// showed. A host of another platform than on record, where a helper of
// that platform is cached and verified, never runs it: the bootstrap
// matches the platform first, the helper of the host's platform is put in
// place, the record is corrected, and the next launch is warm.
func TestWarmLaunchMatchesPlatform(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	other := "linux/arm64"
	if localPlatform == other {
		other = "linux/amd64"
	}
	good := helpertest.Build(t)
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// A helper that would run here, so only the platform check keeps it
	// from serving: its copy for "other" differs by a trailing byte.
	foreign := filepath.Join(filepath.Dir(good), helperbin.Name(other))
	if err := os.WriteFile(foreign, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	helpertest.UseHelper(t, &locateHelpers, good)
	f.plant(t, foreign)
	if _, err := records.Mutate(ctx, f.exec.cfg.Store, records.KindHost, "prod", "host.platform", func(h *records.Host) error {
		h.Platform = other
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	var steps []string
	progress := func(s string) { steps = append(steps, s) }
	if _, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}, Progress: progress}); err != nil || s.State != records.SessionRunning {
		t.Fatalf("launch: %+v, %v", s, err)
	}
	if !uploads(steps) || slices.Contains(steps, StepHelperCached) {
		t.Fatalf("the %s helper served a %s host: %q", other, localPlatform, steps)
	}
	h, _, err := f.exec.getHost(ctx, "prod")
	if err != nil || h.Platform != localPlatform {
		t.Fatalf("host platform on record: %q, %v; want %s", h.Platform, err, localPlatform)
	}

	steps = nil
	if _, _, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"}, Progress: progress}); err != nil {
		t.Fatal(err)
	}
	if uploads(steps) || !slices.Contains(steps, StepHelperCached) {
		t.Fatalf("second launch: %q", steps)
	}
}

// The helper a warm launch finds cached answers its first request with
// a protocol refusal when it is stale (left beside the CLI by an older
// version, which installed it on the host too). It did nothing: the
// launch passes it over for the next local copy, uploads that, and sends
// the same request again.
func TestWarmLaunchPassesOverStaleHelper(t *testing.T) {
	f := newLaunchFixture(t)
	ctx := context.Background()
	stale := helpertest.BuildSpeaking(t, 99)
	good := helpertest.Build(t)
	cache := t.TempDir()
	gz, err := (helperbin.Helper{Path: good}).Compressed()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, helperbin.Name(localPlatform)+".gz"), gz, 0o600); err != nil {
		t.Fatal(err)
	}
	helpertest.UseLocator(t, &locateHelpers, &helperbin.Locator{Executable: filepath.Join(filepath.Dir(stale), "kandev-exec"), CacheDir: cache, Version: "1.2.3"})
	f.plant(t, stale)

	var steps []string
	task, s, err := f.exec.Launch(ctx, LaunchOptions{Profile: "web", Command: []string{"true"},
		Progress: func(s string) { steps = append(steps, s) }})
	if err != nil || s.State != records.SessionRunning {
		t.Fatalf("launch: %+v, %v", s, err)
	}
	if !uploads(steps) {
		t.Fatalf("the good helper was not uploaded: %q", steps)
	}
	helpertest.SameContent(t, good, filepath.Join(f.root, "bin", helpertest.SHA256(t, good), remote.HelperName))
	if want := filepath.Join(f.root, "tasks", task.DirName); task.TaskDir != want || task.Phase != records.PhaseReady {
		t.Fatalf("task %+v", task)
	}
}

// The controller's proof, as the helper relays it, counts only when it
// answers this launch's nonce with this session's token, for the
// controller controller-start reported.
func TestProven(t *testing.T) {
	const token, nonce = "the-token", "the-nonce"
	h := controller.Health{SessionID: "s1", PID: 42, StartTime: 7}
	h.Proof = proofOf(t, token, nonce, h)
	started := protocol.Started{StartResponse: controller.StartResponse{PID: 42, StartTime: 7, Port: 5}, Health: &h}
	if err := proven(started, "s1", token, nonce); err != nil {
		t.Fatalf("a good proof: %v", err)
	}
	other := h
	other.PID = 43
	other.Proof = proofOf(t, token, nonce, other)
	for name, c := range map[string]struct {
		started          protocol.Started
		session, token   string
		nonce, wantError string
	}{
		"unproven":      {protocol.Started{StartResponse: started.StartResponse, Unproven: "connection refused"}, "s1", token, nonce, "connection refused"},
		"no proof":      {protocol.Started{StartResponse: started.StartResponse}, "s1", token, nonce, "relayed no proof"},
		"another nonce": {started, "s1", token, "old-nonce", "does not verify"},
		"another token": {started, "s1", "forged", nonce, "does not verify"},
		"another pid":   {protocol.Started{StartResponse: started.StartResponse, Health: &other}, "s1", token, nonce, "pid 43"},
		"other session": {started, "s2", token, nonce, "not session s2"},
	} {
		err := proven(c.started, c.session, c.token, c.nonce)
		if err == nil || !strings.Contains(err.Error(), c.wantError) {
			t.Errorf("%s: %v, want %q", name, err, c.wantError)
		}
	}
}

// proofOf is the proof a controller holding token gives for nonce.
func proofOf(t *testing.T, token, nonce string, h controller.Health) string {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(token))
	fmt.Fprintf(mac, "health:%s:%s:%d:%d", nonce, h.SessionID, h.PID, h.StartTime)
	p := hex.EncodeToString(mac.Sum(nil))
	if h.Proof = p; !controller.VerifyHealth(token, nonce, h) {
		t.Fatal("proofOf disagrees with the controller's proof")
	}
	return p
}
