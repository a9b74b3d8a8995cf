package cmdutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/state"
)

// Settings are the global settings: flag, then environment twin, then
// config file, then default. Viper serves only these flat keys; profiles
// and env maps never go through it (it lowercases map keys).
type Settings struct {
	StateDir       string
	ConfigFile     string
	SSHConfig      string
	JSON           bool
	Yes            bool
	Debug          bool
	NoColor        bool
	LockTimeout    time.Duration
	ConnectTimeout time.Duration
	// Keepalive on long-lived connections; hidden, for tests and odd
	// links (zero takes the executor's defaults).
	KeepaliveInterval time.Duration
	KeepaliveDeadline time.Duration
	// ReleaseURL is where `helper fetch` downloads from (config key
	// release-url, KANDEV_EXEC_RELEASE_URL); "" is the project's releases.
	ReleaseURL string
}

// Factory hands commands their dependencies lazily, so that --help,
// completion and version never open the store or dial.
type Factory struct {
	IO      *IOStreams
	Version string

	v         *viper.Viper
	once      sync.Once
	settings  *Settings
	setErr    error
	storeOnce sync.Once
	store     state.Store
	storeErr  error
	exec      *executor.Executor
}

// NewFactory returns a Factory over the process's streams.
func NewFactory(io *IOStreams, version string) *Factory {
	return &Factory{IO: io, Version: version, v: viper.New()}
}

// globals lists each global setting: flag name, env twin, default.
var globals = []struct{ key, env string }{
	{"state-dir", "KANDEV_EXEC_STATE_DIR"},
	{"config", "KANDEV_EXEC_CONFIG"},
	{"ssh-config", "KANDEV_EXEC_SSH_CONFIG"},
	{"yes", "KANDEV_EXEC_YES"},
	{"debug", "KANDEV_EXEC_DEBUG"},
	{"no-color", "NO_COLOR"},
	{"lock-timeout", "KANDEV_EXEC_LOCK_TIMEOUT"},
	{"connect-timeout", "KANDEV_EXEC_CONNECT_TIMEOUT"},
	{"keepalive-interval", "KANDEV_EXEC_KEEPALIVE_INTERVAL"},
	{"keepalive-deadline", "KANDEV_EXEC_KEEPALIVE_DEADLINE"},
	{"json", ""},
}

// AddGlobalFlags declares the global flags on fs and binds them.
func (f *Factory) AddGlobalFlags(fs *pflag.FlagSet) {
	fs.String("state-dir", "", "local state directory (default $XDG_STATE_HOME/kandev-exec)")
	fs.String("config", "", "global settings file (default $XDG_CONFIG_HOME/kandev-exec/config.yaml)")
	fs.String("ssh-config", "", "OpenSSH client config to resolve aliases from (default ~/.ssh/config)")
	fs.Bool("json", false, "machine output on stdout")
	fs.Bool("yes", false, "confirm destructive actions (required without a TTY); never pins a host key")
	fs.Bool("debug", false, "diagnostics on stderr (secrets redacted)")
	fs.Bool("no-color", false, "no ANSI colour")
	fs.Duration("lock-timeout", 10*time.Second, "how long to wait for the state store lock")
	fs.Duration("connect-timeout", 10*time.Second, "TCP connect plus SSH handshake bound, per hop (default: ConnectTimeout from the ssh config, else 10s)")
	fs.Duration("keepalive-interval", 0, "keepalive probe interval on long-lived connections (default 15s)")
	fs.Duration("keepalive-deadline", 0, "silence after which a long-lived connection is declared lost (default 45s)")
	_ = fs.MarkHidden("keepalive-interval")
	_ = fs.MarkHidden("keepalive-deadline")
	for _, g := range globals {
		_ = f.v.BindPFlag(g.key, fs.Lookup(g.key))
		if g.env != "" {
			_ = f.v.BindEnv(g.key, g.env)
		}
	}
	// A setting without a flag: mirrors and tests point helper fetch elsewhere.
	_ = f.v.BindEnv("release-url", "KANDEV_EXEC_RELEASE_URL")
}

// Settings reads the global settings once.
func (f *Factory) Settings() (*Settings, error) {
	f.once.Do(func() { f.settings, f.setErr = f.loadSettings() })
	return f.settings, f.setErr
}

func (f *Factory) loadSettings() (*Settings, error) {
	cfg := f.v.GetString("config")
	explicit := cfg != ""
	if !explicit {
		cfg = filepath.Join(xdgDir("XDG_CONFIG_HOME", ".config"), "kandev-exec", "config.yaml")
	}
	if _, err := os.Stat(cfg); err == nil || explicit {
		f.v.SetConfigFile(cfg)
		f.v.SetConfigType("yaml")
		if err := f.v.ReadInConfig(); err != nil {
			return nil, &FlagError{Err: fmt.Errorf("config file %s: %w", cfg, err)}
		}
	}
	_, noColorEnv := os.LookupEnv("NO_COLOR")
	s := &Settings{
		StateDir:       f.v.GetString("state-dir"),
		ConfigFile:     cfg,
		SSHConfig:      f.v.GetString("ssh-config"),
		JSON:           f.v.GetBool("json"),
		Yes:            f.truthy("yes"),
		Debug:          f.truthy("debug"),
		NoColor:        f.truthy("no-color") || noColorEnv,
		LockTimeout:    f.v.GetDuration("lock-timeout"),
		ConnectTimeout: f.v.GetDuration("connect-timeout"),

		KeepaliveInterval: f.v.GetDuration("keepalive-interval"),
		KeepaliveDeadline: f.v.GetDuration("keepalive-deadline"),
		ReleaseURL:        f.v.GetString("release-url"),
	}
	if s.StateDir == "" {
		s.StateDir = filepath.Join(xdgDir("XDG_STATE_HOME", ".local/state"), "kandev-exec")
	}
	if s.LockTimeout <= 0 {
		return nil, FlagErrorf("--lock-timeout must be positive, got %s", s.LockTimeout)
	}
	switch {
	case !f.v.IsSet("connect-timeout"):
		// Unset: each hop's ConnectTimeout from the ssh config, else 10s.
		s.ConnectTimeout = 0
	case s.ConnectTimeout <= 0:
		return nil, FlagErrorf("--connect-timeout must be positive, got %s", s.ConnectTimeout)
	}
	if s.KeepaliveInterval < 0 || s.KeepaliveDeadline < 0 {
		return nil, FlagErrorf("--keepalive-interval and --keepalive-deadline must not be negative")
	}
	if s.NoColor {
		f.IO.DisableColor()
	}
	return s, nil
}

// truthy reads a boolean setting the way people write them in the
// environment: 1, true, yes, on (any case). Viper's GetBool would take
// KANDEV_EXEC_YES=yes as false.
func (f *Factory) truthy(key string) bool {
	switch strings.ToLower(strings.TrimSpace(f.v.GetString(key))) {
	case "1", "true", "yes", "on", "y", "t":
		return true
	}
	return false
}

// JSON reports whether --json is set, without failing.
func (f *Factory) JSON() bool { return f.v.GetBool("json") }

func xdgDir(env, fallback string) string {
	if d := os.Getenv(env); d != "" && filepath.IsAbs(d) {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, fallback)
}

// Store opens the state store on first use.
func (f *Factory) Store() (state.Store, error) {
	f.storeOnce.Do(func() {
		s, err := f.Settings()
		if err != nil {
			f.storeErr = err
			return
		}
		// Never a nil *FileStore inside the interface: Close would panic.
		st, err := state.Open(s.StateDir, state.Options{LockTimeout: s.LockTimeout})
		if err != nil {
			f.storeErr = err
			return
		}
		f.store = st
	})
	return f.store, f.storeErr
}

// Executor builds the executor over the store on first use.
func (f *Factory) Executor() (*executor.Executor, error) {
	if f.exec != nil {
		return f.exec, nil
	}
	s, err := f.Settings()
	if err != nil {
		return nil, err
	}
	st, err := f.Store()
	if err != nil {
		return nil, err
	}
	var debug io.Writer
	if s.Debug {
		debug = f.IO.ErrOut
	}
	f.exec = executor.New(executor.Config{Store: st, StateDir: s.StateDir, SSHConfig: s.SSHConfig, ConnectTimeout: s.ConnectTimeout, Debug: debug,
		KeepaliveInterval: s.KeepaliveInterval, KeepaliveDeadline: s.KeepaliveDeadline})
	return f.exec, nil
}

// Close releases what was opened.
func (f *Factory) Close() {
	if f.store != nil {
		f.store.Close()
	}
}
