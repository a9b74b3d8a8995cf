package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/kdlbs/kandev-exec/internal/suggest"
	"github.com/kdlbs/kandev-exec/state/etcdstore"
)

// Setting is one global setting: a flag on every command, its environment
// twin, and a key of the config file. The flags, `kandev-exec help config`
// and the config file's validation are all made from GlobalSettings, so none
// can name a key the others do not know.
type Setting struct {
	Key     string `json:"key"`  // the flag's name and the config file's key
	Env     string `json:"env"`  // the environment twin; "" = none
	Type    string `json:"type"` // "string", "bool" or "duration"
	Default string `json:"default"`
	Doc     string `json:"doc"`
	// InFile: the config file may set it. --config and --json concern one
	// invocation and are flags (or environment) only.
	InFile bool `json:"in_file"`
	Hidden bool `json:"-"` // left out of --help (tests, odd links)
	// FileOnly: no flag, so that it never sits in an argument list (the
	// etcd store's credentials): the config file or the environment.
	FileOnly bool `json:"file_only"`

	flagValue time.Duration // a duration flag's own default
}

// GlobalSettings lists the global settings, in the order help shows them.
var GlobalSettings = []Setting{
	{Key: "state-dir", Env: "KANDEV_EXEC_STATE_DIR", Type: "string", InFile: true,
		Default: "$XDG_STATE_HOME/kandev-exec", Doc: "local state directory"},
	{Key: "config", Env: "KANDEV_EXEC_CONFIG", Type: "string",
		Default: "$XDG_CONFIG_HOME/kandev-exec/config.yaml", Doc: "global settings file"},
	{Key: "ssh-config", Env: "KANDEV_EXEC_SSH_CONFIG", Type: "string", InFile: true, Default: "~/.ssh/config",
		Doc: "OpenSSH client config to resolve host aliases from"},
	{Key: "json", Type: "bool", Default: "false", Doc: "machine output on stdout"},
	{Key: "jq", Type: "string", Doc: "filter the --json output with a jq expression (implies --json); strings print raw"},
	{Key: "template", Type: "string", Doc: "format the --json output with a Go template (implies --json): `kandev-exec help formatting`"},
	{Key: "yes", Env: "KANDEV_EXEC_YES", Type: "bool", InFile: true, Default: "false",
		Doc: "confirm destructive actions (required without a TTY); never pins a host key"},
	{Key: "debug", Env: "KANDEV_EXEC_DEBUG", Type: "bool", InFile: true, Default: "false",
		Doc: "diagnostics on stderr (secrets redacted)"},
	{Key: "no-color", Env: "NO_COLOR", Type: "bool", InFile: true, Default: "false", Doc: "no ANSI colour"},
	{Key: "lock-timeout", Env: "KANDEV_EXEC_LOCK_TIMEOUT", Type: "duration", InFile: true, Default: "10s",
		Doc: "how long to wait for the state store lock", flagValue: 10 * time.Second},
	{Key: "connect-timeout", Env: "KANDEV_EXEC_CONNECT_TIMEOUT", Type: "duration", InFile: true,
		Default: "ConnectTimeout from the ssh config, else 10s",
		Doc:     "TCP connect plus SSH handshake bound, per hop"},
	{Key: "keepalive-interval", Env: "KANDEV_EXEC_KEEPALIVE_INTERVAL", Type: "duration", InFile: true, Hidden: true,
		Default: "15s", Doc: "keepalive probe interval on long-lived connections"},
	{Key: "keepalive-deadline", Env: "KANDEV_EXEC_KEEPALIVE_DEADLINE", Type: "duration", InFile: true, Hidden: true,
		Default: "45s", Doc: "silence after which a long-lived connection is declared lost"},
	{Key: "claim-ttl", Env: "KANDEV_EXEC_CLAIM_TTL", Type: "duration", InFile: true, Hidden: true,
		Default: "1m", Doc: "how long a claim on a task outlives its holder's last renewal (a holder renews it every third of that)"},
	{Key: "store", Env: "KANDEV_EXEC_STORE", Type: "string", InFile: true, Default: "file: (the state directory)",
		Doc: "where state lives: file: or etcd://host:2379[,host:2379...]/prefix (TLS and auth: the store-* keys)"},
	{Key: "store-insecure", Env: "KANDEV_EXEC_STORE_INSECURE", Type: "bool", InFile: true, Default: "false",
		Doc: "allow plain text to an etcd store that is not on this machine (warns)"},
	{Key: "store-timeout", Env: "KANDEV_EXEC_STORE_TIMEOUT", Type: "duration", InFile: true, Default: "10s",
		Doc: "bound of each etcd store call, retries included", flagValue: etcdstore.DefaultTimeout},
	{Key: "store-tls", Env: "KANDEV_EXEC_STORE_TLS", Type: "bool", InFile: true, FileOnly: true, Default: "false",
		Doc: "TLS to the etcd store even without a CA or client certificate file"},
	{Key: "store-ca-file", Env: "KANDEV_EXEC_STORE_CA_FILE", Type: "string", InFile: true, FileOnly: true,
		Doc: "CA certificate(s) the etcd endpoints must chain to"},
	{Key: "store-cert-file", Env: "KANDEV_EXEC_STORE_CERT_FILE", Type: "string", InFile: true, FileOnly: true,
		Doc: "client certificate for the etcd store"},
	{Key: "store-key-file", Env: "KANDEV_EXEC_STORE_KEY_FILE", Type: "string", InFile: true, FileOnly: true,
		Doc: "its private key (mode 0600)"},
	{Key: "store-user", Env: "KANDEV_EXEC_STORE_USER", Type: "string", InFile: true, FileOnly: true,
		Doc: "etcd user"},
	{Key: "store-password-file", Env: "KANDEV_EXEC_STORE_PASSWORD_FILE", Type: "string", InFile: true, FileOnly: true,
		Doc: "file holding the etcd user's password (mode 0600); or KANDEV_EXEC_STORE_PASSWORD"},
	{Key: "release-url", Env: "KANDEV_EXEC_RELEASE_URL", Type: "string", InFile: true, FileOnly: true,
		Default: "the project's GitHub releases", Doc: "where `helper fetch` downloads release helpers from (a mirror)"},
}

// ExampleConfig is a config file `help config` shows; a test reads it.
const ExampleConfig = `state-dir: /srv/kandev/state
ssh-config: /home/dev/.ssh/config.kandev
lock-timeout: 30s
connect-timeout: 5s
debug: false
`

// addFlag declares s on fs.
func (s Setting) addFlag(fs *pflag.FlagSet) {
	usage := s.Doc
	if s.Type != "bool" && s.flagValue == 0 && s.Default != "" {
		usage += " (default " + s.Default + ")"
	}
	switch s.Type {
	case "bool":
		fs.Bool(s.Key, false, usage)
	case "duration":
		fs.Duration(s.Key, s.flagValue, usage)
	default:
		fs.String(s.Key, "", usage)
	}
	if s.Hidden {
		_ = fs.MarkHidden(s.Key)
	}
}

// ConfigError is a global settings file that cannot be used (exit 2):
// File and Line say where.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

func (e *ConfigError) Hint() string {
	return "`kandev-exec help config` lists the keys and their types"
}

// checkConfigFile reads the global settings file strictly, as profiles
// are read: an unknown key, a key the file may not set, a duplicate or a
// value of the wrong type is a *ConfigError naming the line.
func checkConfigFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return &ConfigError{File: path, Msg: err.Error()}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return &ConfigError{File: path, Msg: err.Error()}
	}
	return checkConfig(path, data)
}

func checkConfig(path string, data []byte) error {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file sets nothing
		}
		return &ConfigError{File: path, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null") {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return &ConfigError{File: path, Line: root.Line, Msg: "want a mapping of settings (key: value)"}
	}
	var known []string
	byKey := map[string]Setting{}
	for _, s := range GlobalSettings {
		if s.InFile {
			known = append(known, s.Key)
			byKey[s.Key] = s
		}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		bad := func(format string, a ...any) error {
			return &ConfigError{File: path, Line: k.Line, Msg: fmt.Sprintf(format, a...)}
		}
		if first, dup := seen[k.Value]; dup {
			return bad("duplicate key %q (first at line %d)", k.Value, first)
		}
		seen[k.Value] = k.Line
		s, ok := byKey[k.Value]
		switch {
		case ok:
		case isSetting(k.Value):
			return bad("%q cannot be set in the config file: it concerns one invocation (%s)", k.Value, howToSet(k.Value))
		default:
			return bad("unknown key %q%s", k.Value, suggest.Phrase(k.Value, known))
		}
		if err := checkValue(s, v); err != "" {
			return &ConfigError{File: path, Line: v.Line, Msg: fmt.Sprintf("%q: %s", k.Value, err)}
		}
	}
	return nil
}

// checkValue says what is wrong with a setting's value, or "".
func checkValue(s Setting, v *yaml.Node) string {
	if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
		return "want a " + s.Type + " value"
	}
	switch s.Type {
	case "bool":
		if v.ShortTag() != "!!bool" {
			return "want true or false"
		}
	case "duration":
		d, err := time.ParseDuration(v.Value)
		if err != nil {
			return fmt.Sprintf("want a duration such as 30s or 2m, not %q", v.Value)
		}
		if d <= 0 {
			return "want a positive duration"
		}
	}
	return ""
}

func isSetting(key string) bool {
	for _, s := range GlobalSettings {
		if s.Key == key {
			return true
		}
	}
	return false
}

// howToSet says how a setting the file may not hold is given instead.
func howToSet(key string) string {
	for _, s := range GlobalSettings {
		if s.Key == key && s.Env != "" {
			return "use --" + key + " or $" + s.Env
		}
	}
	return "use --" + key
}
