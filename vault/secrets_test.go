package vault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

const secretValue = "s3cr3t-value-for-tests"

func newTestVault(t *testing.T) *Vault {
	t.Helper()
	dir := t.TempDir()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(dir, st)
}

// valueFiles lists the files of secret name in the secrets directory.
func valueFiles(t *testing.T, e *Vault, name string) []string {
	t.Helper()
	_, files, err := e.secretFiles(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, vf := range files {
		out = append(out, vf.file)
	}
	return out
}

// liveValuePath is the file the secret's record names.
func liveValuePath(t *testing.T, e *Vault, name string) string {
	t.Helper()
	rec, err := e.secretRecord(context.Background(), name)
	if err != nil || rec == nil {
		t.Fatalf("record of %s: %+v, %v", name, rec, err)
	}
	return valuePath(filepath.Join(e.dir, "secrets"), name, rec.Version)
}

func TestSetSecretStoresValueOnlyInItsFile(t *testing.T) {
	ctx := context.Background()
	e := newTestVault(t)
	s, created, err := e.SetSecret(ctx, "tok", []byte(secretValue))
	if err != nil || !created || s.Name != "tok" {
		t.Fatalf("set: %+v %v %v", s, created, err)
	}
	dir := filepath.Join(e.dir, "secrets")
	first := liveValuePath(t, e, "tok")
	fi, err := os.Stat(first)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode: %v %v", fi, err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", di.Mode())
	}
	if _, created, err := e.SetSecret(ctx, "tok", []byte(secretValue+"2")); err != nil || created {
		t.Fatalf("update: %v %v", created, err)
	}
	// The update went to a new file and removed the old one.
	live := liveValuePath(t, e, "tok")
	if files := valueFiles(t, e, "tok"); live == first || len(files) != 1 || filepath.Join(dir, files[0]) != live {
		t.Fatalf("files after update: %v, record names %s (first was %s)", files, live, first)
	}
	// Nothing else holds the value: records, journal, temp files.
	filepath.WalkDir(e.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == live {
			return err
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secretValue)) {
			t.Errorf("%s holds the secret value", p)
		}
		return nil
	})
	got, err := e.Reveal(profiles.Ref{Kind: profiles.RefSecret, Name: "tok"})
	if err != nil || got != secretValue+"2" {
		t.Fatalf("reveal: %q %v", got, err)
	}
	list, err := e.ListSecrets(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "tok" || list[0].CreatedAt.IsZero() {
		t.Fatalf("list: %+v %v", list, err)
	}
}

func TestSetSecretRefusesBadInput(t *testing.T) {
	e := newTestVault(t)
	for name, value := range map[string]string{"../x": "v", ".hidden": "v", "empty": "", "nul": "leak\x00me"} {
		_, _, err := e.SetSecret(context.Background(), name, []byte(value))
		var ue *ValueError
		var ne *records.NameError
		if !errors.As(err, &ue) && !errors.As(err, &ne) {
			t.Errorf("%q: got %v", name, err)
		} else if strings.Contains(err.Error(), "leak") {
			t.Errorf("%q: error quotes the value: %v", name, err)
		}
	}
}

func TestSecretFilesRefuseSymlinks(t *testing.T) {
	ctx := context.Background()
	e := newTestVault(t)
	if _, _, err := e.SetSecret(ctx, "tok", []byte("v")); err != nil {
		t.Fatal(err)
	}
	// A link planted where the record's value file is: reveal refuses it,
	// and the next set neither writes through it nor follows it to remove.
	outside := filepath.Join(t.TempDir(), "target")
	os.WriteFile(outside, []byte("elsewhere"), 0o600)
	live := liveValuePath(t, e, "tok")
	os.Remove(live)
	if err := os.Symlink(outside, live); err != nil {
		t.Fatal(err)
	}
	var unsafe *state.UnsafePathError
	if _, err := e.Reveal(profiles.Ref{Kind: profiles.RefSecret, Name: "tok"}); !errors.As(err, &unsafe) {
		t.Errorf("reveal through a link: %v", err)
	}
	if _, _, err := e.SetSecret(ctx, "tok", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "elsewhere" {
		t.Errorf("link target changed: %q", b)
	}
	if _, err := os.Lstat(live); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link was left in place: %v", err)
	}
	if got, err := e.Reveal(profiles.Ref{Kind: profiles.RefSecret, Name: "tok"}); err != nil || got != "new" {
		t.Errorf("reveal after set: %q, %v", got, err)
	}
	// A linked secrets directory is refused as a whole.
	dir := filepath.Dir(live)
	os.RemoveAll(dir)
	os.Symlink(t.TempDir(), dir)
	if _, _, err := e.SetSecret(ctx, "tok", []byte("v")); !errors.As(err, &unsafe) {
		t.Errorf("linked dir: %v", err)
	}
}

func TestRevealReferences(t *testing.T) {
	e := newTestVault(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KE_SET", "from-env")
	t.Setenv("KE_EMPTY", "")
	os.WriteFile(filepath.Join(home, "tok"), []byte("from-file\n\n"), 0o600)
	for _, c := range []struct {
		ref  profiles.Ref
		want string
		ok   bool
	}{
		{profiles.Ref{Kind: profiles.RefFromEnv, Name: "KE_SET"}, "from-env", true},
		{profiles.Ref{Kind: profiles.RefFromEnv, Name: "KE_EMPTY"}, "", true},
		{profiles.Ref{Kind: profiles.RefFromEnv, Name: "KE_UNSET_FOR_SURE"}, "", false},
		{profiles.Ref{Kind: profiles.RefFromFile, Name: "~/tok"}, "from-file\n", true}, // one newline stripped
		{profiles.Ref{Kind: profiles.RefFromFile, Name: filepath.Join(home, "tok")}, "from-file\n", true},
		{profiles.Ref{Kind: profiles.RefFromFile, Name: "~/missing"}, "", false},
		{profiles.Ref{Kind: profiles.RefSecret, Name: "never-set"}, "", false},
	} {
		got, err := e.Reveal(c.ref)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%s %s: got %q, %v", c.ref.Kind, c.ref.Name, got, err)
		}
	}
}

func TestRemoveSecretNamesItsUsers(t *testing.T) {
	ctx := context.Background()
	e := newTestVault(t)
	web := profiles.Profile{Name: "web", Host: "prod", Env: []profiles.EnvEntry{{Key: "B", Ref: profiles.Ref{Kind: profiles.RefSecret, Name: "tok"}}}}
	data, _ := json.Marshal(web)
	if _, err := e.st.Create(ctx, records.KindProfile, "web", data, state.Event{Type: "profile.created"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.SetSecret(ctx, "tok", []byte("v")); err != nil {
		t.Fatal(err)
	}
	users, err := e.RemoveSecret(ctx, "tok")
	if err != nil || !reflect.DeepEqual(users, []string{"profile web"}) {
		t.Fatalf("rm: %v %v", users, err)
	}
	if files := valueFiles(t, e, "tok"); len(files) != 0 {
		t.Fatalf("files left behind: %v", files)
	}
	var nf *records.NotFoundError
	if _, err := e.RemoveSecret(ctx, "tok"); !errors.As(err, &nf) {
		t.Fatalf("second rm: %v", err)
	}
}

// The secrets and tokens directories are the user's alone: one another
// user owns is refused before any value goes in, one others may read or
// write is tightened to 0700.
func TestPrivateDirsRefuseAnotherOwnerAndTightenModes(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	ctx := context.Background()
	e := newTestVault(t)
	dir := filepath.Join(e.dir, SecretsDirName)
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	if _, _, err := e.SetSecret(ctx, "tok", []byte(secretValue)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("a loose secrets dir was not tightened: %v, %v", fi.Mode(), err)
	}
	tokens := filepath.Join(e.dir, tokensDirName)
	if err := os.Mkdir(tokens, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, tokens} {
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	var unsafe *state.UnsafePathError
	if _, _, err := e.SetSecret(ctx, "tok", []byte("other")); !errors.As(err, &unsafe) || !strings.Contains(err.Error(), "owned by another user") {
		t.Errorf("set into another user's secrets dir: %v", err)
	}
	if _, err := e.Reveal(profiles.Ref{Kind: profiles.RefSecret, Name: "tok"}); !errors.As(err, &unsafe) {
		t.Errorf("reveal from another user's secrets dir: %v", err)
	}
	if err := e.SaveToken("sess-1", "t0ken"); !errors.As(err, &unsafe) {
		t.Errorf("token into another user's tokens dir: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(tokens, "sess-1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a token was written: %v", err)
	}
}
