package ssh

import (
	"os/exec"
	"strings"
	"testing"
)

// Every login shell sshd may hand the command to (sh, bash, fish, tcsh)
// runs the bootstrap under /bin/sh unchanged: newlines, quotes,
// backslashes and dollars arrive intact.
func TestBootstrapSurvivesLoginShells(t *testing.T) {
	script := "x='it'\"'\"'s'\necho \"$x\"\nprintf '%s\\n' 'back\\slash' \"tab\tend\"\nif true; then\n  echo 'multi\nline'\nfi\necho end\\"
	want := "it's\nback\\slash\ntab\tend\nmulti\nline\nend\\\n"
	for _, shell := range []string{"sh", "bash", "fish", "tcsh"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Fatalf("%s is not installed (apt-get install -y %s)", shell, shell)
		}
		for _, s := range []string{script, "echo one-line 'q' \"$HOME\" | tr -d x"} {
			out, err := exec.Command(path, "-c", BootstrapCommand(s)).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", shell, err, out)
			}
			if s == script && string(out) != want {
				t.Errorf("%s: got %q, want %q", shell, out, want)
			}
			if s != script && !strings.HasPrefix(string(out), "one-line q /") {
				t.Errorf("%s: one-line script gave %q", shell, out)
			}
		}
	}
}
