package mux

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// peerEnv makes the test binary a bare client of the socket it names:
// it connects and prints what the master said first ("SSH-..." when it
// served the connection, nothing when it hung up).
const peerEnv = "KANDEV_MUX_TEST_PEER"

func TestMain(m *testing.M) {
	if sock := os.Getenv(peerEnv); sock != "" {
		c, err := net.DialTimeout("unix", sock, 10*time.Second)
		if err != nil {
			fmt.Println("connect:", err)
			os.Exit(1)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, 4)
		n, _ := io.ReadFull(c, b)
		fmt.Printf("said %q\n", b[:n])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const nobody = 65534

// openUp lets other users through every directory down to path, and
// makes path itself world-writable: what the uid check is there for
// when the modes fail.
func openUp(t *testing.T, path string) {
	t.Helper()
	for d := filepath.Dir(path); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
}

// peer runs this test binary as a bare client of sock, as uid.
func peer(t *testing.T, bin, sock string, uid uint32) string {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), peerEnv+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("peer as uid %d: %v: %s", uid, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A process of another user that reaches the socket (its directory and
// mode opened up here) is hung up on before a byte of SSH; one of this
// user is served.
func TestAnotherUsersConnectionIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test connects as another user and needs root (CI runs as root)")
	}
	s := sshtest.NewServer(t)
	sv := serve(t, s, 0)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "peer")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	openUp(t, bin)
	os.Chmod(bin, 0o755)
	openUp(t, sv.sock)
	defer os.Chmod(filepath.Dir(sv.sock), 0o700)
	if got := peer(t, bin, sv.sock, nobody); got != `said ""` {
		t.Fatalf("uid %d: %s, want the master to hang up", nobody, got)
	}
	if got := peer(t, bin, sv.sock, 0); !strings.HasPrefix(got, `said "SSH-`) {
		t.Fatalf("this user: %s, want the master's SSH banner", got)
	}
}

// A socket directory that is another user's, or open to others, is
// refused on both sides: no master listens there, no client connects.
func TestSocketDirectoryRefused(t *testing.T) {
	s := sshtest.NewServer(t)
	for name, spoil := range map[string]func(dir string) error{
		"open to others": func(dir string) error { return os.Chmod(dir, 0o755) },
		"another owner":  func(dir string) error { return os.Chown(dir, nobody, nobody) },
	} {
		t.Run(name, func(t *testing.T) {
			sv := serve(t, s, 0)
			if err := spoil(filepath.Dir(sv.sock)); err != nil {
				t.Fatal(err)
			}
			_, err := Dial(context.Background(), sv.sock, sv.tg, time.Second)
			if err == nil || !strings.Contains(err.Error(), "connection reuse refused") {
				t.Fatalf("Dial: %v, want refused", err)
			}
			if _, err := Listen(filepath.Join(filepath.Dir(sv.sock), "other.sock")); err == nil || !strings.Contains(err.Error(), "connection reuse refused") {
				t.Fatalf("Listen: %v, want refused", err)
			}
			os.Chown(filepath.Dir(sv.sock), 0, 0)
			os.Chmod(filepath.Dir(sv.sock), 0o700)
		})
	}
}
