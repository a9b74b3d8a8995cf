package taskdir

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// emptyTaskDir makes <root>/tasks/t-1 (0700) the way Prepare would,
// without a checkout, for the ops that run in a task directory.
func emptyTaskDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tasks", "t-1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunScriptExitCodeAndRedactedTail(t *testing.T) {
	dir := emptyTaskDir(t)
	var lines []string
	res, err := RunScript(context.Background(), RunScriptRequest{
		Dir:    dir,
		Shell:  "/bin/sh",
		Script: `head -c 6000 /dev/zero | tr '\0' x; echo; echo "token=$API_TOKEN pwd=$(pwd)"; echo "half $API_TOKEN" >&2; exit 3`,
		Env:    map[string]string{"API_TOKEN": "s3cr3t-value"},
		Redact: []string{"s3cr3t-value", ""},
		Log:    "prepare.log",
	}, func(l string) { lines = append(lines, l) })
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.TimedOut {
		t.Fatalf("result = %+v", res)
	}
	// The tail is whole lines: the long one lost its start, so it goes.
	want := "token=*** pwd=" + dir + "\nhalf ***\n"
	if res.OutputTail != want {
		t.Fatalf("tail = %q, want %q", res.OutputTail, want)
	}
	// Each line passed on as it came, a long one in pieces; all masked.
	if len(lines) != 4 || lines[0] != strings.Repeat("x", maxLine) || lines[1] != strings.Repeat("x", 6000-maxLine) ||
		lines[2] != "token=*** pwd="+dir || lines[3] != "half ***" {
		t.Fatalf("lines = %q", lines)
	}
	// The log keeps it all, masked.
	log, err := os.ReadFile(filepath.Join(dir, ".kandev", "prepare.log"))
	if err != nil || string(log) != strings.Repeat("x", 6000)+"\n"+want {
		t.Fatalf("log = %q, %v", log, err)
	}
}

// The log stops at its bound, saying so; the tail and the lines go on.
func TestRunScriptLogBounded(t *testing.T) {
	dir := emptyTaskDir(t)
	res, err := RunScript(context.Background(), RunScriptRequest{Dir: dir, Shell: "/bin/sh", Log: "prepare.log",
		Script: `head -c 1100000 /dev/zero | tr '\0' y; echo; echo last line`}, nil)
	if err != nil || res.ExitCode != 0 || res.OutputTail != "last line\n" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	log, err := os.ReadFile(filepath.Join(dir, ".kandev", "prepare.log"))
	if err != nil || !strings.HasPrefix(string(log), strings.Repeat("y", logLimit)+"\n[kandev-exec] the rest of the output is not kept") || strings.Contains(string(log), "last line") {
		t.Fatalf("log is %d bytes, ends %q, %v", len(log), log[max(0, len(log)-120):], err)
	}
}

// A timeout kills the script's whole process group, background children
// included.
func TestRunScriptTimeoutKillsGroup(t *testing.T) {
	dir := emptyTaskDir(t)
	pidFile := filepath.Join(dir, "child.pid")
	res, err := RunScript(context.Background(), RunScriptRequest{
		Dir: dir, Shell: "/bin/sh", TimeoutSeconds: 1,
		Script: `sleep 300 & echo $! > child.pid; echo started; wait`,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != 128+int(syscall.SIGKILL) || !strings.Contains(res.OutputTail, "started") {
		t.Fatalf("result = %+v", res)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitDead(t, pid)
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d survived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive treats a zombie as dead: a container's pid 1 may never reap it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}

func TestRunScriptRefusesBadRequests(t *testing.T) {
	for _, req := range []RunScriptRequest{
		{Dir: "/", Script: "true"},
		{Dir: "/", Shell: "/bin/sh"},
		{Dir: "relative", Shell: "/bin/sh", Script: "true"},
	} {
		_, err := RunScript(context.Background(), req, nil)
		wantCode(t, err, CodeBadRequest)
	}
}

// The stream is masked before the tail is cut, whatever the write
// boundaries, so no part of a secret survives.
func TestScriptOutputTailAcrossWrites(t *testing.T) {
	secret := "abcdefgh"
	stream := "xx" + secret + "yy" + secret[:5] + "zz" + secret + secret
	for limit := 1; limit <= len(stream); limit++ {
		for step := 1; step <= len(stream); step++ {
			o := newScriptOutput([]string{"abcd", secret}, limit, nil)
			for i := 0; i < len(stream); i += step {
				o.Write([]byte(stream[min(i, len(stream)):min(i+step, len(stream))]))
			}
			full := "xx***yy***ezz******"
			if want := full[max(0, len(full)-limit):]; o.tail() != want {
				t.Fatalf("limit %d step %d: tail = %q, want %q", limit, step, o.tail(), want)
			}
		}
	}
}

// Regression: a prepare script printing one line of a multi-line
// secret gets it masked in the tail too.
func TestRunScriptMasksLinesOfMultiLineSecret(t *testing.T) {
	key := "-----BEGIN TEST KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX\nab\n-----END TEST KEY-----"
	res, err := RunScript(context.Background(), RunScriptRequest{Dir: emptyTaskDir(t), Shell: "/bin/sh",
		Script: `printf '%s\n' "$KEY" | sed -n 2p; echo "short: ab"`,
		Env:    map[string]string{"KEY": key}, Redact: []string{key}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.OutputTail != "***\nshort: ab\n" {
		t.Fatalf("tail = %q", res.OutputTail)
	}
}
