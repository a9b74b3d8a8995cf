package reclaim

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A git the helper starts for one directory is, between its fork and its
// exec, a copy of the helper holding every descriptor the helper holds,
// such as the lock of a directory another worker proves at that moment.
// That copy is not a process using the directory: the check waits for
// the start to end and looks again. A child of the helper that still
// holds the directory then keeps it.
func TestInUseNotFooledByHelpersForkBeforeExec(t *testing.T) {
	for _, c := range []struct {
		name     string
		letsGo   bool
		wantKept bool
	}{{"fork lets go at exec", true, false}, {"child still holds after exec", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lockPath := filepath.Join(dir, ".kandev-lock")
			lock, err := os.Create(lockPath)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
			h := newHost(0)
			h.gits.starting.RLock() // a git of this helper is starting
			started := true
			defer func() {
				if started {
					h.gits.starting.RUnlock()
				}
			}()
			// The child holds the lock as the fork did: by inheritance.
			child := exec.Command("sh", "-c", `read x; exec 3<&-; echo closed; read y`)
			child.ExtraFiles = []*os.File{lock}
			in, err := child.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { in.Close(); child.Wait() }()

			users := make(chan []string, 1)
			go func() {
				u, _ := h.inUse(t.Context(), dir, dir, nil)
				users <- u
			}()
			// The check found the child and waits for the start to end.
			for h.gits.starting.TryRLock() {
				h.gits.starting.RUnlock()
				select {
				case u := <-users:
					t.Fatalf("the check ended (in use by %q) without waiting for the start", u)
				default:
					runtime.Gosched()
				}
			}
			if c.letsGo {
				in.Write([]byte("exec\n"))
				if line, _ := bufio.NewReader(out).ReadString('\n'); line != "closed\n" {
					t.Fatalf("child said %q", line)
				}
			}
			h.gits.starting.RUnlock()
			started = false
			got := <-users
			kept := len(got) > 0
			if kept != c.wantKept {
				t.Fatalf("in use by %q: kept %v, want %v", got, kept, c.wantKept)
			}
			if kept && !strings.Contains(got[0], "open file .kandev-lock") {
				t.Fatalf("%q does not name the lock", got[0])
			}
		})
	}
}
