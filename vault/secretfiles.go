package vault

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/state"
)

// Secret values live beside the store and nowhere else (records, the
// journal and output carry names, times and version ids only), in
// <state dir>/secrets (0700): one file per value ever set, <name>@<vid>,
// 0600, written whole once and never rewritten. The secret's record names
// the vid in force, so value and record change together by the record's
// compare-and-swap alone, with no lock beyond it:
//
//  1. the new value goes to a fresh file, fsynced;
//  2. the record is switched to its vid;
//  3. the files of the secret the record no longer names are removed.
//
// A crash anywhere leaves the record naming a whole file. What a crash
// leaves besides (an unnamed file; a .NAME.tmp-* file of an older
// kandev-exec, which held plaintext) is a stray: removed by the next
// write or rm of that secret, and reported by doctor. Until its record
// write ends, a file being written is flocked by its writer, which tells
// it from a stray; the flock is only ever tried, never waited on.
//
// Before vids, the value was secrets/<name> and the record named no
// version; such a secret is read from there until it is next set.

// MaxSecretSize bounds a value: it ends up in a process environment, and
// a bound keeps a mistaken --from-file /dev/zero from eating memory.
const MaxSecretSize = 1 << 20

// SecretsDirName is the secrets directory in the state directory.
const SecretsDirName = "secrets"

// secretsDir returns the secrets directory, creating it when create is
// set.
func (vt *Vault) secretsDir(create bool) (string, error) {
	return vt.privateDir(SecretsDirName, create)
}

// privateDir returns a 0700 directory beside the store. One that is a
// link, not a directory or another user's is refused (fsx.CheckPrivate),
// and one others could read or write is tightened first, so no value is
// written where it could leak.
func (vt *Vault) privateDir(name string, create bool) (string, error) {
	dir := filepath.Join(vt.dir, name)
	if create {
		// The state directory itself may not exist yet, nor its parents:
		// a store makes it on its first write only, and one that is not a
		// local directory (etcd) never does.
		if err := os.MkdirAll(filepath.Dir(vt.dir), 0o700); err != nil {
			return "", err
		}
		if _, err := fsx.EnsureDir(vt.dir, 0o700); err != nil {
			return "", err
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	err := fsx.CheckPrivate(dir, os.Getuid(), true)
	var oe *fsx.OwnershipError
	switch {
	case errors.As(err, &oe) && oe.Reason != fsx.ReasonWritable:
		return "", &state.UnsafePathError{Path: dir, Reason: oe.Reason}
	case err != nil && oe == nil:
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// vidEncoding spells a version id in characters a file name keeps as is.
var vidEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

const vidLen = 26 // 16 random bytes

func newVID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return vidEncoding.EncodeToString(b)
}

func validVID(s string) bool {
	b, err := vidEncoding.DecodeString(s)
	return err == nil && len(s) == vidLen && len(b) == 16
}

// valuePath is where the value of version vid of a secret lives; "" is
// the file of a secret set before versions.
func valuePath(dir, name, vid string) string {
	if vid == "" {
		return filepath.Join(dir, name)
	}
	return filepath.Join(dir, name+"@"+vid)
}

// valueFile is an entry of the secrets directory that belongs to a
// secret: a value (vid "" for the file of a secret set before versions),
// or a temp file an older kandev-exec left behind.
type valueFile struct {
	secret, file, vid string
	temp              bool
}

// parseValueFile tells whose entry file is; false for anything else.
// Names cannot hold "@" or start with ".", so each form has one reading.
func parseValueFile(file string) (valueFile, bool) {
	if rest, ok := strings.CutPrefix(file, "."); ok {
		i := strings.LastIndex(rest, ".tmp-")
		if i < 0 || !profiles.ValidName(rest[:i]) || strings.Trim(rest[i+len(".tmp-"):], "0123456789") != "" {
			return valueFile{}, false
		}
		return valueFile{secret: rest[:i], file: file, temp: true}, true
	}
	name, vid, versioned := strings.Cut(file, "@")
	if !profiles.ValidName(name) || versioned && !validVID(vid) {
		return valueFile{}, false
	}
	return valueFile{secret: name, file: file, vid: vid}, true
}

// newValue is a value file being written: open and flocked until the
// record write that names it has ended.
type newValue struct {
	f    *os.File
	vid  string
	path string
}

// writeValue writes value to a fresh file of the secret and keeps it
// flocked. A cleaner may catch the file between its creation and the
// flock (it then looks like a crash's leftover); that try is abandoned
// and another vid taken.
func writeValue(dir, name string, value []byte) (*newValue, error) {
	for range 3 {
		v := &newValue{vid: newVID()}
		v.path = valuePath(dir, name, v.vid)
		f, err := fsx.OpenFile(v.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, err
		}
		v.f = f
		if ok, err := v.hold(); err != nil || !ok {
			v.abandon()
			if err != nil {
				return nil, err
			}
			continue
		}
		_, err = f.Write(value)
		if err == nil {
			err = f.Sync()
		}
		if err == nil {
			err = fsx.SyncDir(dir)
		}
		if err != nil {
			v.abandon()
			return nil, err
		}
		return v, nil
	}
	return nil, fmt.Errorf("secret %q: a concurrent cleanup kept removing the new value file; retry", name)
}

// hold flocks the new file and checks that it is still linked: once we
// hold the flock, no cleaner removes it.
func (v *newValue) hold() (bool, error) {
	if err := syscall.Flock(int(v.f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(v.f.Fd()), &st); err != nil {
		return false, err
	}
	return st.Nlink > 0, nil
}

// done lets go of a value its record now names.
func (v *newValue) done() { v.f.Close() }

// abandon removes a value no record names; best effort, as a leftover is
// a stray the next write removes.
func (v *newValue) abandon() {
	os.Remove(v.path)
	v.f.Close()
}
