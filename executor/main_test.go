package executor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/kdlbs/kandev-exec/state"
)

// The test binary is also a connection-reuse master (RunMaster), as the
// CLI's hidden `host master NAME` is: testMasterEnv names the host, and
// the state dir and ssh config come in the two after it.
const (
	testMasterEnv       = "KANDEV_EXEC_TEST_MASTER"
	testMasterStateEnv  = "KANDEV_EXEC_TEST_MASTER_STATE"
	testMasterConfigEnv = "KANDEV_EXEC_TEST_MASTER_SSH_CONFIG"
)

func TestMain(m *testing.M) {
	if host := os.Getenv(testMasterEnv); host != "" {
		os.Exit(runTestMaster(host))
	}
	os.Exit(m.Run())
}

func runTestMaster(host string) int {
	dir := os.Getenv(testMasterStateEnv)
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	e := New(Config{Store: st, StateDir: dir, SSHConfig: os.Getenv(testMasterConfigEnv)})
	if err := e.RunMaster(context.Background(), host, os.NewFile(3, "ready"), os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "master:", err)
		return 1
	}
	return 0
}

// testMasters is Config.MasterCommand for a test: this binary as the
// master, on stateDir with sshConfig.
func testMasters(stateDir, sshConfig string) func(string) (*exec.Cmd, error) {
	return func(host string) (*exec.Cmd, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), testMasterEnv+"="+host, testMasterStateEnv+"="+stateDir, testMasterConfigEnv+"="+sshConfig)
		return cmd, nil
	}
}
