package procstat

import (
	"os"
	"os/exec"
	"testing"
)

func TestStartNamesOneProcess(t *testing.T) {
	mine, ok := Start(os.Getpid())
	if !ok || mine == 0 {
		t.Fatalf("this process's start: %d, %v", mine, ok)
	}
	if again, _ := Start(os.Getpid()); again != mine {
		t.Fatalf("this process's start read twice: %d then %d", mine, again)
	}
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	if s, ok := Start(ended.Process.Pid); ok {
		t.Fatalf("a process that ended and was reaped still has a start: %d", s)
	}
}

func TestReadSkipsACommandNameWithParentheses(t *testing.T) {
	p := t.TempDir() + "/stat"
	line := "42 (a) b) (c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 777 0 0\n"
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if f[0] != "S" || f[1] != "1" || f[2] != "42" || f[19] != "777" {
		t.Fatalf("fields %q", f)
	}
	if err := os.WriteFile(p, []byte("42 (a) S 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil {
		t.Fatal("a short stat file read without an error")
	}
}
