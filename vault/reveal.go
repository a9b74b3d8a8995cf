package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/profiles"
)

// Reveal fetches the value of a winning reference at launch; it is the
// profiles.RevealFunc of this executor. Something missing is an error,
// never an empty value: an unset variable is not the empty string. The
// resolver wraps errors in *profiles.SecretError, naming key and origin.
func (vt *Vault) Reveal(r profiles.Ref) (string, error) {
	switch r.Kind {
	case profiles.RefSecret:
		return vt.revealSecret(context.Background(), r.Name)
	case profiles.RefFromEnv:
		v, ok := os.LookupEnv(r.Name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set: export it in the shell that launches", r.Name)
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
		// A from_file reference names the user's own file: a link is followed.
		b, err := fsx.ReadNamedFileMax(path, MaxSecretSize)
		if err != nil {
			return "", err
		}
		// Editors and `echo >` end files with a newline that is not part of
		// the value.
		return strings.TrimSuffix(string(b), "\n"), nil
	}
	return "", fmt.Errorf("unknown reference kind %q", r.Kind)
}

// revealSecret reads the record, then the value file it names. A set
// finishing in between may remove that file: the record then names a
// newer one, and the read is tried again.
func (vt *Vault) revealSecret(ctx context.Context, name string) (string, error) {
	prev := "\x00" // no version id
	for range 3 {
		rec, err := vt.secretRecord(ctx, name)
		if err != nil {
			return "", err
		}
		if rec == nil {
			return "", fmt.Errorf("secret %q is not set: run `kandev-exec secret set %s`", name, name)
		}
		if rec.Version == prev {
			break // the file is missing, and no newer value replaced it
		}
		prev = rec.Version
		dir, err := vt.secretsDir(false)
		var b []byte
		if err == nil {
			b, err = fsx.ReadFileMax(valuePath(dir, name, rec.Version), MaxSecretSize)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return string(b), err
		}
	}
	return "", fmt.Errorf("secret %q: its value file is missing; set it again with `kandev-exec secret set %s`", name, name)
}
