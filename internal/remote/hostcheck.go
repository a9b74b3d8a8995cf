package remote

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/shquote"
)

// Before the helper can be trusted, only /bin/sh can check the host, so
// the ownership rules of internal/fsx (owned.go) have this one shell twin:
// it guards the path to the helper (every directory above the workdir
// root, the root, bin, bin/<sha256> and the file) before the helper is
// verified or run, and the helper applies the Go rules to everything
// below. TestHostCheckTwin holds both to the same verdicts.
//
// ls -ldn is the portable stat: POSIX, and the same columns on GNU,
// BusyBox and macOS (mode, links, uid, gid, ...). A refusal prints the
// refuse* lines and exits RefusedExit, so that no caller mistakes it for
// the helper's own answer or failure.
const HostCheckFuncs = `kx_uid=$(id -u)
kx_stat() { kx_m= kx_o=; set -f; set -- $(ls -ldn -- "$1" 2>/dev/null); set +f; kx_m=${1-} kx_o=${3-}; [ -n "$kx_m" ]; }
kx_refuse() { printf 'refuse=%s\nrefuse_uid=%s\nrefuse_mode=%s\nrefuse_reason=%s\n' "$1" "$kx_o" "$kx_m" "$2"; exit ` + RefusedExitStr + `; }
kx_own() {
  kx_stat "$1" || kx_refuse "$1" "does not exist"
  case $kx_m in l*) kx_refuse "$1" "` + fsx.ReasonSymlink + `" ;; esac
  case $2$kx_m in dd*|--*) ;; d*) kx_refuse "$1" "` + fsx.ReasonNotDir + `" ;; *) kx_refuse "$1" "` + fsx.ReasonNotFile + `" ;; esac
  [ "$kx_o" = "$kx_uid" ] || kx_refuse "$1" "` + fsx.ReasonOwner + `"
  case $kx_m in ?????w*|????????w*) kx_refuse "$1" "` + fsx.ReasonWritable + `" ;; esac
}
kx_anc() {
  kx_p=$1
  while [ "$kx_p" != / ]; do
    kx_p=${kx_p%/*}; [ -n "$kx_p" ] || kx_p=/
    kx_stat "$kx_p" || kx_refuse "$kx_p" "does not exist"
    case $kx_m in l*) kx_refuse "$kx_p" "` + fsx.ReasonSymlink + `" ;; d*) ;; *) kx_refuse "$kx_p" "` + fsx.ReasonNotDir + `" ;; esac
    case $kx_o in 0|"$kx_uid") ;; *) kx_refuse "$kx_p" "` + fsx.ReasonOwner + `" ;; esac
    case $kx_m in ?????w*|????????w*) case $kx_m in ?????????[tT]*) ;; *) kx_refuse "$kx_p" "` + fsx.ReasonWritableNoStk + `" ;; esac ;; esac
  done
}
kx_mkdir() { [ -d "$1" ] && [ ! -L "$1" ] || mkdir -m 700 -- "$1" 2>/dev/null || kx_own "$1" d; kx_own "$1" d; }
kx_root() {
  kx_e=$1
  while [ ! -e "$kx_e" ] && [ ! -L "$kx_e" ]; do kx_e=${kx_e%/*}; [ -n "$kx_e" ] || kx_e=/; done
  if [ "$kx_e" != "$1" ]; then
    kx_ep=$(cd -P -- "$kx_e" 2>/dev/null && pwd -P) || kx_refuse "$kx_e" "cannot be entered"
    kx_anc "$kx_ep/x"
    mkdir -p -m 700 -- "$1" || kx_refuse "$1" "cannot be created"
  fi
  R=$(cd -P -- "$1" 2>/dev/null && pwd -P) || kx_refuse "$1" "cannot be entered"
  kx_anc "$R"
  kx_own "$R" d
}
`

// RefusedExit is the bootstrap's exit status for a refused path.
const (
	RefusedExit    = 86
	RefusedExitStr = "86"
)

// HostPathError is a path on the host that fails the ownership rules.
type HostPathError struct {
	Host string
	*fsx.OwnershipError
}

func (e *HostPathError) Error() string {
	return fmt.Sprintf("host %s: refusing %s; it must be owned by you and writable by nobody else", e.Host, e.OwnershipError.Error())
}

func (e *HostPathError) Unwrap() error { return e.OwnershipError }

// Refusal reads the refuse* lines of a refused bootstrap; nil when the
// output holds none.
func Refusal(host string, kv map[string]string) error {
	p, ok := kv["refuse"]
	if !ok {
		return nil
	}
	uid, err := strconv.Atoi(kv["refuse_uid"])
	if err != nil {
		uid = -1
	}
	return &HostPathError{Host: host, OwnershipError: &fsx.OwnershipError{Path: p, UID: uid,
		Mode: parseLsMode(kv["refuse_mode"]), Reason: kv["refuse_reason"]}}
}

// parseLsMode reads the mode column of ls -l (drwxrwxrwt, -rw-r--r--@).
func parseLsMode(s string) fs.FileMode {
	if len(s) < 10 {
		return 0
	}
	var m fs.FileMode
	switch s[0] {
	case 'd':
		m |= fs.ModeDir
	case 'l':
		m |= fs.ModeSymlink
	case '-':
	default:
		m |= fs.ModeIrregular
	}
	const rwx = "rwxrwxrwx"
	for i := 0; i < 9; i++ {
		c := s[1+i]
		if c == rwx[i] || (i%3 == 2 && c != '-' && c != 'T' && c != 'S') {
			m |= 1 << (8 - i)
		}
	}
	if s[9] == 't' || s[9] == 'T' {
		m |= fs.ModeSticky
	}
	return m
}

// Word renders a path as one shell word that expands a leading ~
// through $HOME (a quoted ~ would not expand).
func Word(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		return `"$HOME"` + shquote.Quote(strings.TrimPrefix(p, "~"))
	}
	return shquote.Quote(p)
}

// guardScript checks the whole path to file (a shell word naming a file
// in h's directory) under h's physical root, as the bootstrap reported
// it: every directory above the root, the root, bin, bin/<sha256>, the
// file.
func guardScript(h Helper, file string) string {
	return guardDirScript(h) + `kx_own ` + file + ` -
`
}

// guardDirScript is guardScript up to h's directory, for a script that
// creates the file there itself (and checks it before any use).
func guardDirScript(h Helper) string {
	return HostCheckFuncs + `R=` + shquote.Quote(h.root) + `
kx_anc "$R"; kx_own "$R" d; kx_own "$R/bin" d; kx_own "$R/bin/` + h.sha + `" d
`
}
