package cmd

import (
	"errors"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// capture VAR REGEX: set VAR to REGEX's first group in the last command's
// stdout, so later lines can name the IDs a command printed.
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture VAR REGEX")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("capture %s: no match for %q in stdout", args[0], args[1])
	}
	ts.Setenv(args[0], m[1])
}

// freeport VAR: set VAR to a loopback port that was free a moment ago.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	p, err := closedPort()
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(p))
}

// httpget URL: GET it, retrying for up to 15 s on any failure (a server
// started in the background may not be up yet); the body goes to stdout.
// With !, once something accepts the connection the request must fail.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: httpget URL")
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := hc.Get(args[0])
		if err != nil && (!neg || errors.Is(err, syscall.ECONNREFUSED)) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		switch {
		case err != nil && neg:
			return
		case err != nil:
			ts.Fatalf("httpget %s: %v", args[0], err)
		}
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		ts.Check(rerr)
		if neg {
			ts.Fatalf("httpget %s: unexpected success (HTTP %d)", args[0], resp.StatusCode)
		}
		if resp.StatusCode != http.StatusOK {
			ts.Fatalf("httpget %s: HTTP %d", args[0], resp.StatusCode)
		}
		_, _ = ts.Stdout().Write(body)
		return
	}
}

// require TOOL...: fail, naming the package to install, when a tool a
// transcript needs is missing; a missing tool never turns into a skip.
func cmdRequire(ts *testscript.TestScript, neg bool, args []string) {
	for _, tool := range args {
		if _, err := exec.LookPath(tool); err != nil {
			ts.Fatalf("%s is required: apt-get install -y %s (.ci/run installs it)", tool, tool)
		}
	}
}
