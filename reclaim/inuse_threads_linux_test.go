package reclaim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The in-use check reads every thread of a process, not only its first:
// each case is a real process (C, built here) working in the directory
// in a way /proc/<pid>/ alone does not show.

// leaderEnded is C that a second thread of a worker runs to wait until
// the process's first thread has ended (/proc/self/stat, the process's,
// shows a zombie): fd is what the worker holds open.
const leaderEnded = `
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sched.h>
static int fd;
static void awaitLeaderEnded(void) {
	char b[1024];
	for (;;) {
		int f = open("/proc/self/stat", O_RDONLY);
		int n = read(f, b, sizeof b - 1);
		close(f);
		b[n > 0 ? n : 0] = 0;
		char *p = strrchr(b, ')');
		if (p && p[2] == 'Z') return;
		sched_yield();
	}
}
`

// zombieLeader chdirs into argv[1], opens README there and ends its
// first thread; a second thread waits for a byte on stdin, then writes
// through the descriptor.
const zombieLeader = leaderEnded + `
static void *work(void *a) {
	awaitLeaderEnded();
	write(1, "ready\n", 6);
	char c;
	read(0, &c, 1);
	write(fd, "work\n", 5);
	return 0;
}
int main(int argc, char **argv) {
	if (chdir(argv[1])) return 1;
	fd = open("README", O_WRONLY | O_APPEND);
	if (fd < 0) return 2;
	pthread_t t;
	pthread_create(&t, 0, work, 0);
	pthread_exit(0);
}
`

// threadCwd stays in / while a thread with its own working directory
// (unshare(CLONE_FS)) works in argv[1] until stdin closes.
const threadCwd = `
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
static char *dir;
static void *work(void *a) {
	if (unshare(CLONE_FS) || chdir(dir)) { write(1, "fail\n", 5); return 0; }
	write(1, "ready\n", 6);
	char c;
	read(0, &c, 1);
	return 0;
}
int main(int argc, char **argv) {
	dir = argv[1];
	if (chdir("/")) return 1;
	pthread_t t;
	pthread_create(&t, 0, work, 0);
	pthread_join(t, 0);
	return 0;
}
`

// deepCwd works 25 directories of 200-letter names below argv[1], past
// PATH_MAX, until stdin closes.
const deepCwd = `
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
	char name[201];
	memset(name, 'd', 200);
	name[200] = 0;
	if (chdir(argv[1])) return 1;
	for (int i = 0; i < 25; i++) {
		if (mkdir(name, 0700) || chdir(name)) return 2;
	}
	write(1, "ready\n", 6);
	char c;
	read(0, &c, 1);
	return 0;
}
`

// worker builds src and starts it on dir, returning once it says it is
// ready: its stdin, which it waits on, is closed and the process waited
// for when the test ends.
func worker(t *testing.T, src, dir string) (pid int) {
	t.Helper()
	pid, _, _ = startWorker(t, src, dir)
	return pid
}

// startWorker is worker with the arguments given, returning the
// worker's stdin and stdout too, for a test that goes on talking to it.
func startWorker(t *testing.T, src string, args ...string) (pid int, in io.Writer, out *bufio.Reader) {
	t.Helper()
	tmp := t.TempDir()
	c, bin := filepath.Join(tmp, "w.c"), filepath.Join(tmp, "w")
	if err := os.WriteFile(c, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-pthread", "-o", bin, c).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	out = bufio.NewReader(stdout)
	if line, _ := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("the worker said %q", line)
	}
	return cmd.Process.Pid, stdin, out
}

// A process whose first thread ended while another works on in the
// directory (holding README open): /proc/<pid>/ shows no working
// directory and no descriptor, and its state is a zombie's.
func TestInUseByAProcessWhoseFirstThreadEnded(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	pid := worker(t, zombieLeader, dir)
	if _, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil {
		t.Fatalf("pid %d's first thread still shows its working directory: the case is not made", pid)
	}
	r := apply(t, target(root, "t-1", "task-1"))[0]
	wantResult(t, r, Fail, Failed, InUse)
	if !strings.Contains(r.Detail, fmt.Sprintf("pid %d", pid)) {
		t.Fatalf("detail: %s", r.Detail)
	}
}

// A thread with a working directory of its own in the directory, the
// process's first thread in /.
func TestInUseByAThreadWithItsOwnWorkingDirectory(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	pid := worker(t, threadCwd, dir)
	if cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); cwd != "/" {
		t.Fatalf("pid %d works in %q: the case is not made", pid, cwd)
	}
	wantResult(t, apply(t, target(root, "t-1", "task-1"))[0], Fail, Failed, InUse)
}

// The same through a confirmed reclaim's listing that removes.
func TestListingKeepsAnOrphanAThreadWorksIn(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := listedOrphan(t, root, "tabc", bare)
	worker(t, threadCwd, dir)
	l, err := ListAndApply(context.Background(), ListRequest{Root: root, Apply: &ListApply{View: LocalView{InstallationID: testInstallation}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Applied) != 1 {
		t.Fatalf("applied %+v", l.Applied)
	}
	wantResult(t, l.Applied[0], Fail, Failed, InUse)
	if _, err := os.Lstat(filepath.Join(dir, "README")); err != nil {
		t.Fatalf("the orphan is not whole: %v", err)
	}
}

// A working directory whose path is longer than the kernel will spell
// (readlink fails with ENAMETOOLONG): found by what it leads to.
func TestInUseByAWorkingDirectoryPastPathMax(t *testing.T) {
	bare, _ := origin(t)
	root := newRoot(t)
	dir := prepared(t, root, "t-1", "task-1", bare)
	pid := worker(t, deepCwd, filepath.Join(dir, ".kandev"))
	if _, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil {
		t.Fatal("its working directory reads: the case is not made")
	}
	r := apply(t, target(root, "t-1", "task-1"))[0]
	wantResult(t, r, Fail, Failed, InUse)
	if !strings.Contains(r.Detail, "a path too long to read") {
		t.Fatalf("detail: %s", r.Detail)
	}
}
