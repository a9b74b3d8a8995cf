package cmdutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/state"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

// StoreURL is a parsed --store: a local directory (file:) or an etcd
// prefix (etcd://host:2379[,host:2379...]/prefix).
type StoreURL struct {
	Dir       string // file: the store directory
	Endpoints []string
	Prefix    string
}

// Etcd reports whether the URL names an etcd store.
func (u StoreURL) Etcd() bool { return len(u.Endpoints) > 0 }

// InStateDir reports whether u is the file store in stateDir, the
// directory that also keeps what stays local (secret values, tokens).
func (u StoreURL) InStateDir(stateDir string) bool {
	return !u.Etcd() && filepath.Clean(u.Dir) == filepath.Clean(stateDir)
}

func (u StoreURL) String() string {
	if u.Etcd() {
		return etcdstore.URL(u.Endpoints, u.Prefix)
	}
	return "file:" + u.Dir
}

// ParseStoreURL reads a store URL: "" and "file:" are the state
// directory, file:/abs/dir another directory, etcd://... an etcd prefix.
func ParseStoreURL(raw, stateDir string) (StoreURL, error) {
	switch {
	case raw == "" || raw == "file:":
		return StoreURL{Dir: stateDir}, nil
	case strings.HasPrefix(raw, "file:"):
		dir := strings.TrimPrefix(strings.TrimPrefix(raw, "file:"), "//")
		if !filepath.IsAbs(dir) {
			return StoreURL{}, FlagErrorf("store URL %q: a file store is file: (the state directory) or file:/absolute/dir", raw)
		}
		return StoreURL{Dir: filepath.Clean(dir)}, nil
	case strings.HasPrefix(raw, "etcd://"):
		eps, prefix, err := etcdstore.ParseURL(raw)
		if err != nil {
			return StoreURL{}, &FlagError{Err: err}
		}
		return StoreURL{Endpoints: eps, Prefix: prefix}, nil
	}
	return StoreURL{}, FlagErrorf("store URL %q: want file: (the state directory, the default) or etcd://host:2379[,host:2379...]/prefix", raw)
}

// etcdConfig is the etcd client configuration the settings give u: TLS
// files and user from the config file (or their environment twins), the
// password from a file or KANDEV_EXEC_STORE_PASSWORD, never from argv.
func (s *Settings) etcdConfig(u StoreURL) (etcdstore.Config, error) {
	cfg := etcdstore.Config{Endpoints: u.Endpoints, Prefix: u.Prefix, Username: s.StoreUser,
		AllowPlaintext: s.StoreInsecure, Timeout: s.StoreTimeout}
	if s.StoreTLS || s.StoreCAFile != "" || s.StoreCertFile != "" || s.StoreKeyFile != "" {
		cfg.TLS = &etcdstore.TLSFiles{CAFile: s.StoreCAFile, CertFile: s.StoreCertFile, KeyFile: s.StoreKeyFile}
	}
	pw := os.Getenv(passwordEnv)
	fromEnv := pw != ""
	switch {
	case fromEnv && s.StorePasswordFile != "":
		return cfg, FlagErrorf("the store password is given twice (%s and store-password-file): keep one", passwordEnv)
	case s.StorePasswordFile != "":
		p, err := etcdstore.ReadPasswordFile(s.StorePasswordFile)
		if err != nil {
			return cfg, &FlagError{Err: fmt.Errorf("store-password-file: %w", err)}
		}
		pw = p
	}
	if pw != "" && s.StoreUser == "" {
		return cfg, FlagErrorf("a store password is set but no store-user")
	}
	cfg.Password = pw
	return cfg, nil
}

// passwordEnv carries the etcd password for scripts; there is no flag.
const passwordEnv = "KANDEV_EXEC_STORE_PASSWORD"

// OpenStore opens the store raw names ("" is the --store setting) with
// the settings' lock timeout, TLS and credentials. Plain text across the
// network is refused without --store-insecure, and warned about with it.
func (f *Factory) OpenStore(ctx context.Context, raw string) (state.Store, error) {
	s, err := f.Settings()
	if err != nil {
		return nil, err
	}
	if raw == "" {
		raw = s.Store
	}
	u, err := ParseStoreURL(raw, s.StateDir)
	if err != nil {
		return nil, err
	}
	if !u.Etcd() {
		// Never a nil *FileStore inside the interface: Close would panic.
		st, err := state.Open(u.Dir, state.Options{LockTimeout: s.LockTimeout})
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	cfg, err := s.etcdConfig(u)
	if err != nil {
		return nil, err
	}
	if cfg.TLS == nil && !etcdstore.Loopback(cfg.Endpoints) {
		if !cfg.AllowPlaintext {
			return nil, FlagErrorf("state store %s: plain text to endpoints that are not on this machine; configure TLS (store-ca-file, store-cert-file, store-key-file in the config file) or accept the risk with --store-insecure", u)
		}
		fmt.Fprintf(f.IO.ErrOut, "warning: state store %s is plain text across the network (--store-insecure): anyone on the path can read and change it\n", u)
	}
	st, err := etcdstore.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return st, nil
}
