package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// newLockableVault is a vault whose store gives up waiting for its lock
// quickly, and a function that holds that lock as another process would
// until the returned release.
func newLockableVault(t *testing.T) (*Vault, func() (release func())) {
	t.Helper()
	dir := t.TempDir()
	st, err := state.Open(dir, state.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	hold := func() func() {
		l, err := fsx.Acquire(context.Background(), filepath.Join(dir, "lock"), fsx.LockOptions{Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l.Release
	}
	return New(dir, st), hold
}

func reveal(t *testing.T, e *Vault, name string) string {
	t.Helper()
	v, err := e.Reveal(profiles.Ref{Kind: profiles.RefSecret, Name: name})
	if err != nil {
		t.Fatalf("reveal %s: %v", name, err)
	}
	return v
}

// TestSecretSetFailureLeavesOldValue: a set that fails (here: the store
// lock is not obtained, exit 11; or the command is interrupted) changes
// nothing. The value used to be replaced before the record write failed.
func TestSecretSetFailureLeavesOldValue(t *testing.T) {
	ctx := context.Background()
	e, hold := newLockableVault(t)
	if _, _, err := e.SetSecret(ctx, "tok", []byte("old")); err != nil {
		t.Fatal(err)
	}
	before := valueFiles(t, e, "tok")
	release := hold()
	_, _, err := e.SetSecret(ctx, "tok", []byte("new"))
	var locked *state.LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("set while locked: %v", err)
	}
	if got := reveal(t, e, "tok"); got != "old" {
		t.Fatalf("after a failed set the value is %q, want the old one", got)
	}
	release()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := e.SetSecret(cancelled, "tok", []byte("new")); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted set: %v", err)
	}
	if got := reveal(t, e, "tok"); got != "old" {
		t.Fatalf("after an interrupted set the value is %q", got)
	}
	if after := valueFiles(t, e, "tok"); !slices.Equal(after, before) {
		t.Fatalf("failed sets left files: %v, before %v", after, before)
	}
}

// TestSecretRemoveFailureKeepsValue: an rm that fails leaves a secret
// that ls lists and launches can reveal. The value used to be deleted
// before the record, so a failed rm left a listed secret with no value.
func TestSecretRemoveFailureKeepsValue(t *testing.T) {
	ctx := context.Background()
	e, hold := newLockableVault(t)
	if _, _, err := e.SetSecret(ctx, "tok", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	release := hold()
	var locked *state.LockedError
	if _, err := e.RemoveSecret(ctx, "tok"); !errors.As(err, &locked) {
		t.Fatalf("rm while locked: %v", err)
	}
	release()
	if list, err := e.ListSecrets(ctx); err != nil || len(list) != 1 {
		t.Fatalf("ls after a failed rm: %v, %v", list, err)
	}
	if got := reveal(t, e, "tok"); got != "kept" {
		t.Fatalf("after a failed rm the value is %q", got)
	}
}

// TestConcurrentFirstSecretSets: sets of a new secret racing each other
// all succeed and are all journaled; the value in force is the one the
// last journal entry names, and no other file is left. Two first sets
// used to both write the value, with one record write refused (exit 10).
func TestConcurrentFirstSecretSets(t *testing.T) {
	const writers = 8
	ctx := context.Background()
	e := newTestVault(t)
	var wg sync.WaitGroup
	errs := make([]error, writers)
	created := make([]bool, writers)
	start := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			<-start
			_, created[i], errs[i] = e.SetSecret(ctx, "tok", fmt.Appendf(nil, "value-%d", i))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("set %d: %v", i, err)
		}
	}
	if n := len(slices.DeleteFunc(created, func(c bool) bool { return !c })); n != 1 {
		t.Fatalf("%d sets reported creating the secret, want 1", n)
	}
	es, err := e.st.Journal(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sets []state.Entry
	for _, en := range es {
		if en.Kind == records.KindSecret && en.Type == "secret.set" {
			sets = append(sets, en)
		}
	}
	if len(sets) != writers {
		t.Fatalf("%d sets journaled, want %d", len(sets), writers)
	}
	for i, en := range sets {
		if en.Revision != uint64(i+1) {
			t.Fatalf("journal entry %d has revision %d", i, en.Revision)
		}
	}
	var last struct{ Version string }
	json.Unmarshal(sets[writers-1].Detail, &last)
	rec, err := e.secretRecord(ctx, "tok")
	if err != nil || rec.Version != last.Version {
		t.Fatalf("record names version %q, the last journaled set %q (%v)", rec.Version, last.Version, err)
	}
	if files := valueFiles(t, e, "tok"); len(files) != 1 || files[0] != "tok@"+last.Version {
		t.Fatalf("files left: %v", files)
	}
	if got := reveal(t, e, "tok"); !strings.HasPrefix(got, "value-") {
		t.Fatalf("value %q", got)
	}
}

// TestSecretStrayFilesRemovedAndReported: files a killed `secret set` left
// (an unnamed value file, an older kandev-exec's .NAME.tmp-* file, both
// plaintext) are reported by doctor and removed by the next set or rm of
// that secret; a file another process is writing right now is not.
func TestSecretStrayFilesRemovedAndReported(t *testing.T) {
	ctx := context.Background()
	e := newTestVault(t)
	if _, _, err := e.SetSecret(ctx, "tok", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.SetSecret(ctx, "other", []byte("o")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.dir, "secrets")
	plant := func() []string {
		strays := []string{".tok.tmp-2146273", "tok@" + newVID(), "tok", ".other.tmp-1"}
		for _, f := range strays {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("plaintext"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return strays
	}
	strays := plant()
	// A value another set is writing: its file exists and is flocked.
	inFlight := filepath.Join(dir, "tok@"+newVID())
	f, err := os.OpenFile(inFlight, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	gotDir, got, err := e.StraySecretFiles(ctx)
	if err != nil || gotDir != dir || len(got) != 4 {
		t.Fatalf("strays: %s %v %v", gotDir, got, err)
	}
	for _, s := range strays {
		if !slices.Contains(got, s) {
			t.Errorf("strays do not name %s: %v", s, got)
		}
	}
	if slices.Contains(got, filepath.Base(inFlight)) {
		t.Errorf("the file being written is named a stray: %v", got)
	}

	if _, _, err := e.SetSecret(ctx, "tok", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	live := filepath.Base(liveValuePath(t, e, "tok"))
	want := []string{filepath.Base(inFlight), live}
	slices.Sort(want)
	if got := valueFiles(t, e, "tok"); !slices.Equal(got, want) {
		t.Fatalf("after set: %v, want %v (the value in force and the one being written)", got, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".other.tmp-1")); err != nil {
		t.Fatalf("set of tok removed a file of another secret: %v", err)
	}

	plant()
	if _, err := e.RemoveSecret(ctx, "tok"); err != nil {
		t.Fatal(err)
	}
	if got := valueFiles(t, e, "tok"); !slices.Equal(got, []string{filepath.Base(inFlight)}) {
		t.Fatalf("after rm: %v, want only the file being written", got)
	}
	// Once its writer is gone, it is a stray like the others.
	f.Close()
	if _, err := e.RemoveSecret(ctx, "tok"); err != nil {
		t.Fatalf("rm of a secret with only a stray left: %v", err)
	}
	if got := valueFiles(t, e, "tok"); len(got) != 0 {
		t.Fatalf("after the writer died: %v", got)
	}
	var nf *records.NotFoundError
	if _, err := e.RemoveSecret(ctx, "tok"); !errors.As(err, &nf) {
		t.Fatalf("rm of nothing: %v", err)
	}
}

// TestLegacySecretFilesMigrate: a secret stored before value files were
// versioned (secrets/<name>, a record with no version) reveals as before;
// its next set moves it to a versioned file, and rm removes it.
func TestLegacySecretFilesMigrate(t *testing.T) {
	ctx := context.Background()
	e := newTestVault(t)
	dir := filepath.Join(e.dir, "secrets")
	os.Mkdir(dir, 0o700)
	created := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, name := range []string{"tok", "gone"} {
		data, _ := json.Marshal(map[string]any{"name": name, "created_at": created, "updated_at": created})
		if _, err := e.st.Create(ctx, records.KindSecret, name, data, state.Event{Type: "secret.set"}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("legacy-"+name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := reveal(t, e, "tok"); got != "legacy-tok" {
		t.Fatalf("legacy reveal: %q", got)
	}
	if _, strays, err := e.StraySecretFiles(ctx); err != nil || len(strays) != 0 {
		t.Fatalf("legacy files reported as strays: %v, %v", strays, err)
	}
	s, isNew, err := e.SetSecret(ctx, "tok", []byte("new"))
	if err != nil || isNew || !s.CreatedAt.Equal(created) {
		t.Fatalf("set over a legacy secret: %+v, new=%v, %v", s, isNew, err)
	}
	if got := reveal(t, e, "tok"); got != "new" {
		t.Fatalf("after set: %q", got)
	}
	if files := valueFiles(t, e, "tok"); len(files) != 1 || !strings.HasPrefix(files[0], "tok@") {
		t.Fatalf("after set: %v, want one versioned file", files)
	}
	if _, err := e.RemoveSecret(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if files := valueFiles(t, e, "gone"); len(files) != 0 {
		t.Fatalf("rm left the legacy file: %v", files)
	}
}
