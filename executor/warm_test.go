package executor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/helperbin"
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
	dir := filepath.Join(f.root, "bin", sha256Of(t, bin))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, helperName), b, 0o700); err != nil {
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
	good := buildHelper(t)
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
	useHelper(t, good)
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
	stale := buildHelper(t, "github.com/kdlbs/kandev-exec/internal/hostops.protocol=99")
	good := buildHelper(t)
	cache := t.TempDir()
	gz, err := (helperbin.Helper{Path: good}).Compressed()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, helperbin.Name(localPlatform)+".gz"), gz, 0o600); err != nil {
		t.Fatal(err)
	}
	useLocator(t, &helperbin.Locator{Executable: filepath.Join(filepath.Dir(stale), "kandev-exec"), CacheDir: cache, Version: "1.2.3"})
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
	sameContent(t, good, filepath.Join(f.root, "bin", sha256Of(t, good), helperName))
	if want := filepath.Join(f.root, "tasks", task.DirName); task.TaskDir != want || task.Phase != records.PhaseReady {
		t.Fatalf("task %+v", task)
	}
}
