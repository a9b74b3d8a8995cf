package cmdutil

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestCheckConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string // want "" = accepted
	}{
		{"example", ExampleConfig, ""},
		{"empty", "", ""},
		{"comments only", "# nothing set\n", ""},
		{"unknown key", "debug: true\nsate-dir: /x\n", `c.yaml:2: unknown key "sate-dir" (did you mean state-dir?)`},
		{"underscore", "lock_timeout: 5s\n", `c.yaml:1: unknown key "lock_timeout" (did you mean lock-timeout?)`},
		{"nothing close", "frobnicate: 1\n", `c.yaml:1: unknown key "frobnicate"`},
		{"flag only", "config: /x\n", `c.yaml:1: "config" cannot be set in the config file: it concerns one invocation (use --config or $KANDEV_EXEC_CONFIG)`},
		{"duplicate", "debug: true\ndebug: false\n", `c.yaml:2: duplicate key "debug" (first at line 1)`},
		{"bool as string", "yes: \"true\"\n", `c.yaml:1: "yes": want true or false`},
		{"number as duration", "connect-timeout: 5\n", `c.yaml:1: "connect-timeout": want a duration such as 30s or 2m, not "5"`},
		{"negative duration", "lock-timeout: -1s\n", `c.yaml:1: "lock-timeout": want a positive duration`},
		{"mapping value", "state-dir: {a: b}\n", `c.yaml:1: "state-dir": want a string value`},
		{"null value", "ssh-config:\n", `c.yaml:1: "ssh-config": want a string value`},
		{"not a mapping", "- a\n- b\n", `c.yaml:1: want a mapping of settings (key: value)`},
		{"bad yaml", "a: [\n", `c.yaml: invalid YAML`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkConfig("c.yaml", []byte(tc.yaml))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
			var ce *ConfigError
			if err != nil && (!errors.As(err, &ce) || Classify(err).Exit != ExitUsage.Status) {
				t.Fatalf("%v: want a *ConfigError, exit 2", err)
			}
		})
	}
}

// Every setting is documented and becomes a flag of its type, except
// the file-only ones (credentials), which have no flag but an environment twin.
func TestGlobalSettingsMakeTheFlags(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f := NewFactory(&IOStreams{}, "test")
	f.AddGlobalFlags(fs)
	for _, s := range GlobalSettings {
		if s.Doc == "" || (s.Default == "" && s.Type != "string") || (s.Type != "string" && s.Type != "bool" && s.Type != "duration") {
			t.Errorf("%s: want a doc, a known type and (unless a string) a default: %+v", s.Key, s)
		}
		fl := fs.Lookup(s.Key)
		if s.FileOnly {
			if fl != nil || s.Env == "" {
				t.Errorf("%s: file-only, yet a flag %v (or no environment twin)", s.Key, fl)
			}
			continue
		}
		if fl == nil || fl.Value.Type() != s.Type || fl.Hidden != s.Hidden {
			t.Errorf("%s: flag %+v does not match the setting", s.Key, fl)
			continue
		}
	}
}

// --connect-timeout has no default of its own (the ssh config's
// ConnectTimeout applies, else 10s): unset reads as 0, and --help states
// that default once (it printed "(default 10s)" beside it).
func TestConnectTimeoutDefaultsToTheSSHConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want time.Duration
		bad  bool
	}{
		{args: nil, want: 0},
		{args: []string{"--connect-timeout", "3s"}, want: 3 * time.Second},
		{env: "5s", want: 5 * time.Second},
		{args: []string{"--connect-timeout", "0s"}, bad: true},
	} {
		t.Setenv("KANDEV_EXEC_CONNECT_TIMEOUT", tc.env) // empty reads as unset
		t.Setenv("KANDEV_EXEC_CONFIG", "")
		t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no config file there
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f := NewFactory(&IOStreams{}, "test")
		f.AddGlobalFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		s, err := f.Settings()
		switch {
		case tc.bad && err == nil:
			t.Errorf("%q: accepted", tc.args)
		case !tc.bad && (err != nil || s.ConnectTimeout != tc.want):
			t.Errorf("%q env %q: %v, %v; want %s", tc.args, tc.env, s, err, tc.want)
		}
		fl := fs.Lookup("connect-timeout")
		if fl.DefValue != "0s" || strings.Count(fs.FlagUsages(), "(default") != strings.Count(fs.FlagUsages(), "(default ") ||
			!strings.Contains(fs.FlagUsages(), "per hop (default ConnectTimeout from the ssh config, else 10s)\n") {
			t.Errorf("--connect-timeout usage %q, default %q", fl.Usage, fl.DefValue)
		}
	}
}
