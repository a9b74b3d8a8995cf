package remote

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// nobody is the uid that plays "another user on the host".
const nobody = 65534

// needRoot: making a file another user's takes root (CI runs as root).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test chowns fixtures to another uid and needs root (CI runs as root)")
	}
}

// verdict is "" for a path that passes, else the reason it is refused.
type verdict string

func goVerdict(err error) verdict {
	var oe *fsx.OwnershipError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &oe):
		return verdict(oe.Reason)
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	}
	return verdict("error: " + err.Error())
}

// shVerdict runs the shell twin on this machine, as the bootstrap does on
// a host.
func shVerdict(t *testing.T, call, path string, args ...string) verdict {
	t.Helper()
	argv := append([]string{"-c", HostCheckFuncs + call + ` "$@"` + "\necho ok", "sh", path}, args...)
	out, err := exec.Command("/bin/sh", argv...).Output()
	var ee *exec.ExitError
	switch {
	case err == nil && string(out) == "ok\n":
		return ""
	case errors.As(err, &ee) && ee.ExitCode() == RefusedExit:
		var he *HostPathError
		if !errors.As(Refusal("h", Markers(out)), &he) {
			t.Fatalf("%s %s: refused without refuse lines: %q", call, path, out)
		}
		if he.Path != path && call != "kx_anc" {
			t.Fatalf("%s %s: refusal names %s", call, path, he.Path)
		}
		return verdict(he.Reason)
	}
	t.Fatalf("%s %s: %v, %q", call, path, err, out)
	return ""
}

func mkdir(t *testing.T, p string, mode fs.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	chmodOwn(t, p, mode, uid)
	return p
}

func chmodOwn(t *testing.T, p string, mode fs.FileMode, uid int) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
}

// The shell twin and internal/fsx must agree on every path: the shell
// guards the helper before it can be trusted, the Go rules everything
// after, and a difference would be a hole in one of them.
func TestHostCheckTwin(t *testing.T) {
	needRoot(t)
	me := os.Getuid()
	base := t.TempDir()
	file := func(name string, mode fs.FileMode, uid int) string {
		p := filepath.Join(base, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		chmodOwn(t, p, mode, uid)
		return p
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(mkdir(t, filepath.Join(base, "target"), 0o700, me), link); err != nil {
		t.Fatal(err)
	}
	own := []struct {
		name string
		path string
		dir  bool
		want verdict
	}{
		{"private dir", mkdir(t, filepath.Join(base, "d700"), 0o700, me), true, ""},
		{"readable dir", mkdir(t, filepath.Join(base, "d755"), 0o755, me), true, ""},
		{"group-writable dir", mkdir(t, filepath.Join(base, "d770"), 0o770, me), true, fsx.ReasonWritable},
		{"sticky world-writable dir", mkdir(t, filepath.Join(base, "d1777"), fs.ModeSticky|0o777, me), true, fsx.ReasonWritable},
		{"another user's dir", mkdir(t, filepath.Join(base, "dnobody"), 0o700, nobody), true, fsx.ReasonOwner},
		{"symlink to own dir", link, true, fsx.ReasonSymlink},
		{"file for a dir", file("f-for-d", 0o700, me), true, fsx.ReasonNotDir},
		{"dir for a file", mkdir(t, filepath.Join(base, "d-for-f"), 0o700, me), false, fsx.ReasonNotFile},
		{"private file", file("f700", 0o700, me), false, ""},
		{"group-writable file", file("f720", 0o720, me), false, fsx.ReasonWritable},
		{"world-writable file", file("f702", 0o702, me), false, fsx.ReasonWritable},
		{"another user's file", file("fnobody", 0o700, nobody), false, fsx.ReasonOwner},
		{"missing", filepath.Join(base, "missing"), true, "does not exist"},
	}
	for _, c := range own {
		typ := "-"
		if c.dir {
			typ = "d"
		}
		g := goVerdict(fsx.CheckPrivate(c.path, me, c.dir))
		s := shVerdict(t, "kx_own", c.path, typ)
		if g != c.want || s != c.want {
			t.Errorf("%s: Go %q, shell %q, want %q", c.name, g, s, c.want)
		}
	}

	// Ancestors: <base>/<case>/mid/root, with mid varied.
	anc := []struct {
		name string
		mode fs.FileMode
		uid  int
		want verdict
	}{
		{"private parent", 0o700, me, ""},
		{"sticky world-writable parent", fs.ModeSticky | 0o777, me, ""},
		{"world-writable parent", 0o777, me, fsx.ReasonWritableNoStk},
		{"group-writable parent", 0o770, me, fsx.ReasonWritableNoStk},
		{"another user's parent", 0o755, nobody, fsx.ReasonOwner},
	}
	for i, c := range anc {
		top := mkdir(t, filepath.Join(base, "anc"+string(rune('a'+i))), 0o755, me)
		mid := filepath.Join(top, "mid")
		if err := os.Mkdir(mid, 0o700); err != nil {
			t.Fatal(err)
		}
		root := mkdir(t, filepath.Join(mid, "root"), 0o700, me)
		chmodOwn(t, mid, c.mode, c.uid)
		g := goVerdict(fsx.CheckAncestors(root, me))
		s := shVerdict(t, "kx_anc", root)
		if g != c.want || s != c.want {
			t.Errorf("%s: Go %q, shell %q, want %q", c.name, g, s, c.want)
		}
	}
}

func TestParseLsMode(t *testing.T) {
	for in, want := range map[string]fs.FileMode{
		"drwx------":  fs.ModeDir | 0o700,
		"drwxrwxrwt":  fs.ModeDir | fs.ModeSticky | 0o777,
		"drwxrwx--T":  fs.ModeDir | fs.ModeSticky | 0o770,
		"-rwxr-xr-x@": 0o755,
		"lrwxrwxrwx":  fs.ModeSymlink | 0o777,
		"-rwsr-S---":  0o740,
	} {
		if got := parseLsMode(in); got != want {
			t.Errorf("parseLsMode(%q) = %v, want %v", in, got, want)
		}
	}
}

// Word is one shell word that expands a leading ~ through $HOME, and
// nothing else: spaces, quotes and a ~user stay as written.
func TestWord(t *testing.T) {
	home := "/home/o'brien x"
	for in, want := range map[string]string{
		"~":              home,
		"~/.kandev":      home + "/.kandev",
		"~/a b/$(id)":    home + "/a b/$(id)",
		"/srv/k k":       "/srv/k k",
		"~other/.kandev": "~other/.kandev",
		"/x/~/y":         "/x/~/y",
	} {
		cmd := exec.Command("/bin/sh", "-c", `printf %s `+Word(in))
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		if err != nil || string(out) != want {
			t.Errorf("Word(%q) expands to %q, %v; want %q", in, out, err, want)
		}
	}
}
