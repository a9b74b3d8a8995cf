package cmdutil

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// A background child gets what this process resolved, from a flag, the
// environment or the config file, through the environment twins; a
// setting this process overrode by flag does not leak through as it was.
func TestChildEnvCarriesTheResolvedSettings(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("ssh-config: /from/file\nstore-timeout: 7s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KANDEV_EXEC_STATE_DIR", "/from/env")
	t.Setenv("KANDEV_EXEC_STORE", "file:/env/store")
	t.Setenv("KANDEV_EXEC_STORE_PASSWORD", "hunter2")
	t.Setenv("KANDEV_EXEC_CONNECT_TIMEOUT", "")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f := NewFactory(&IOStreams{}, "test")
	f.AddGlobalFlags(fs)
	if err := fs.Parse([]string{"--config", cfg, "--store", "file:" + dir + "/flag", "--connect-timeout", "4s", "--lock-timeout", "3s"}); err != nil {
		t.Fatal(err)
	}
	env, err := f.ChildEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KANDEV_EXEC_STATE_DIR=/from/env", "KANDEV_EXEC_STORE=file:" + dir + "/flag",
		"KANDEV_EXEC_CONNECT_TIMEOUT=4s", "KANDEV_EXEC_LOCK_TIMEOUT=3s", "KANDEV_EXEC_SSH_CONFIG=/from/file",
		"KANDEV_EXEC_STORE_TIMEOUT=7s", "KANDEV_EXEC_CONFIG=" + cfg, "NO_COLOR=1", "KANDEV_EXEC_STORE_PASSWORD=hunter2"} {
		if !slices.Contains(env, want) {
			t.Errorf("%s missing from %v", want, env)
		}
	}
	for _, kv := range env {
		if kv == "KANDEV_EXEC_STORE=file:/env/store" {
			t.Error("the store this process overrode by flag leaked through")
		}
		if strings.Contains(kv, "hunter2") && !strings.HasPrefix(kv, "KANDEV_EXEC_STORE_PASSWORD=") {
			t.Errorf("the password went elsewhere: %s", kv)
		}
	}
}
