package executor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/profiles"
)

// Reveal fetches the value of a winning reference at launch; it is the
// profiles.RevealFunc of this executor. Something missing is an error,
// never an empty value: an unset variable is not the empty string. The
// resolver wraps errors in *profiles.SecretError, naming key and origin.
func (e *Executor) Reveal(r profiles.Ref) (string, error) {
	switch r.Kind {
	case profiles.RefSecret:
		dir, err := e.secretsDir(false)
		if err == nil {
			var b []byte
			if b, err = readValueFile(filepath.Join(dir, r.Name), true); err == nil {
				return string(b), nil
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("secret %q is not set (see `kandev-exec secret ls`)", r.Name)
		}
		return "", err
	case profiles.RefFromEnv:
		v, ok := os.LookupEnv(r.Name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", r.Name)
		}
		return v, nil
	case profiles.RefFromFile:
		path := r.Name
		if rest, ok := strings.CutPrefix(path, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			path = filepath.Join(home, rest)
		}
		b, err := readValueFile(path, false)
		if err != nil {
			return "", err
		}
		// Editors and `echo >` end files with a newline that is not part of
		// the value.
		return strings.TrimSuffix(string(b), "\n"), nil
	}
	return "", fmt.Errorf("unknown reference kind %q", r.Kind)
}
