package cmdutil

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	ClaimTTL          time.Duration // hidden: tests of a holder that stops renewing

	// Store is where records, claims and the journal live: file: (the
	// state directory) or etcd://host:2379[,...]/prefix. The store-*
	// settings below configure an etcd store.
	Store         string
	StoreInsecure bool          // plain text to non-loopback endpoints
	StoreTimeout  time.Duration // bound of each store call
	StoreTLS      bool          // TLS even without a CA or client certificate file
	StoreCAFile   string
	StoreCertFile string
	StoreKeyFile  string
	StoreUser     string
	// StorePasswordFile holds the etcd user's password (mode 0600);
	// KANDEV_EXEC_STORE_PASSWORD is the other way to give it.
	StorePasswordFile string

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

// AddGlobalFlags declares the global flags on fs (from GlobalSettings)
// and binds each to its environment twin.
func (f *Factory) AddGlobalFlags(fs *pflag.FlagSet) {
	for _, s := range GlobalSettings {
		if !s.FileOnly {
			s.addFlag(fs)
			_ = f.v.BindPFlag(s.Key, fs.Lookup(s.Key))
		}
		if s.Env != "" {
			_ = f.v.BindEnv(s.Key, s.Env)
		}
	}
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
		if err := checkConfigFile(cfg); err != nil {
			return nil, err
		}
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
		JSON:           f.JSON(),
		Yes:            f.truthy("yes"),
		Debug:          f.truthy("debug"),
		NoColor:        f.truthy("no-color") || noColorEnv,
		LockTimeout:    f.v.GetDuration("lock-timeout"),
		ConnectTimeout: f.v.GetDuration("connect-timeout"),

		KeepaliveInterval: f.v.GetDuration("keepalive-interval"),
		KeepaliveDeadline: f.v.GetDuration("keepalive-deadline"),
		ClaimTTL:          f.v.GetDuration("claim-ttl"),

		Store:             f.v.GetString("store"),
		StoreInsecure:     f.truthy("store-insecure"),
		StoreTimeout:      f.v.GetDuration("store-timeout"),
		StoreTLS:          f.truthy("store-tls"),
		StoreCAFile:       f.v.GetString("store-ca-file"),
		StoreCertFile:     f.v.GetString("store-cert-file"),
		StoreKeyFile:      f.v.GetString("store-key-file"),
		StoreUser:         f.v.GetString("store-user"),
		StorePasswordFile: f.v.GetString("store-password-file"),

		ReleaseURL: f.v.GetString("release-url"),
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
	if s.ClaimTTL < 0 {
		return nil, FlagErrorf("--claim-ttl must be positive, got %s", s.ClaimTTL)
	}
	if s.StoreTimeout <= 0 {
		return nil, FlagErrorf("--store-timeout must be positive, got %s", s.StoreTimeout)
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

// JSON reports whether --json (or --jq or --template, which imply it) is
// set, without failing.
func (f *Factory) JSON() bool {
	return f.v.GetBool("json") || f.v.GetString("jq") != "" || f.v.GetString("template") != ""
}

func xdgDir(env, fallback string) string {
	if d := os.Getenv(env); d != "" && filepath.IsAbs(d) {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, fallback)
}

// Store opens the state store on first use.
func (f *Factory) Store() (state.Store, error) {
	f.storeOnce.Do(func() { f.store, f.storeErr = f.OpenStore(context.Background(), "") })
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
		KeepaliveInterval: s.KeepaliveInterval, KeepaliveDeadline: s.KeepaliveDeadline, ClaimTTL: s.ClaimTTL,
		Passphrase: f.IO.PassphrasePrompt(), MasterCommand: f.masterCommand})
	return f.exec, nil
}

// masterCommand is this program again as `host master NAME`, with this
// command's settings in its environment (ChildEnv).
func (f *Factory) masterCommand(host string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	env, err := f.ChildEnv()
	if err != nil {
		return nil, err
	}
	return &exec.Cmd{Path: exe, Args: []string{os.Args[0], "host", "master", host}, Env: env}, nil
}

// Close releases what was opened.
func (f *Factory) Close() {
	if f.store != nil {
		f.store.Close()
	}
}
