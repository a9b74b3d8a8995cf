package etcdstore_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
	"github.com/kdlbs/kandev-exec/state/statetest"
)

// The multi-process tests re-run this test binary as a helper, selected
// by helperEnv and pointed at a store by endpoints and prefix.
const (
	helperEnv     = "KANDEV_ETCDSTORE_HELPER"
	helperStore   = "KANDEV_ETCDSTORE_HELPER_STORE" // endpoints,comma-separated|prefix
	helperKind    = state.Kind("widget")
	helperClaimed = "job"
)

// TestHelperProcess is the helper's entry point; it does nothing in a
// normal run.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper for the multi-process tests")
	}
	eps, prefix, _ := strings.Cut(os.Getenv(helperStore), "|")
	err := runHelper(mode, etcdstore.Config{Endpoints: strings.Split(eps, ","), Prefix: prefix})
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(1)
}

func runHelper(mode string, cfg etcdstore.Config) error {
	ctx := context.Background()
	s, err := etcdstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	switch mode {
	case "writeloop":
		return statetest.WriteLoop(ctx, s, os.Stdout)
	case "claim":
		// Take the claim for 1 s, say so, and wait to be killed.
		c, err := s.AcquireClaim(ctx, helperKind, helperClaimed, time.Second)
		if err != nil {
			return err
		}
		fmt.Println(c.ID)
		io.Copy(io.Discard, os.Stdin)
		return nil
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// helperCmd is a helper process (not started) on store prefix of c.
func helperCmd(c *etcdtest.Cluster, mode, prefix string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperStore+"="+strings.Join(c.Endpoints(), ",")+"|"+prefix,
		// A race-enabled helper would otherwise sleep 1s before exiting.
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	return cmd
}

// startHelper starts a helper and returns its first line of output.
func startHelper(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("helper exited before reporting: %v", cmd.Wait())
	}
	return lines.Text()
}
