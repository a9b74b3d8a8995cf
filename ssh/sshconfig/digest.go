package sshconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// What a lookup answers depends on the config files read (every Include,
// and which files an Include's glob matches), the client binary, who runs
// it and the environment variables the files name. configDigest hashes
// all of these, so answers kept between commands are reused only while
// none changed. ok is false for a config whose answers depend on more:
// Match exec or localnetwork, DNS canonicalization, an Include with
// tokens or variables, a file that cannot be read.
func configDigest(opts ResolveOptions) (digest string, ok bool) {
	me := currentLocal()
	d := &digester{h: sha256.New(), me: me, env: map[string]bool{}}
	d.field("v1", me.name, me.home, me.uid, me.host, os.Getenv("HOME"), opts.ConfigFile)
	if bin := sshBinary(opts); bin == "-" {
		d.field("parser")
	} else {
		fi, err := os.Stat(bin)
		if err != nil {
			return "", false
		}
		d.field("ssh", bin, strconv.FormatInt(fi.Size(), 10), fi.ModTime().UTC().String())
	}
	for _, f := range configFiles(opts.ConfigFile, me) {
		if !d.file(f.path, f.user, 0) {
			return "", false
		}
	}
	names := make([]string, 0, len(d.env))
	for n := range d.env {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v, set := os.LookupEnv(n)
		d.field("env", n, strconv.FormatBool(set), v)
	}
	return hex.EncodeToString(d.h.Sum(nil)), true
}

// configFiles are the files ssh reads first: the -F file alone, or the
// user's and then the system's.
func configFiles(file string, me local) []cfgFile {
	if file != "" {
		return []cfgFile{{path: file, user: true}}
	}
	return []cfgFile{{path: filepath.Join(me.home, ".ssh", "config"), user: true}, {path: "/etc/ssh/ssh_config"}}
}

// envRef is a ${NAME} or $NAME in a config line.
var envRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

type digester struct {
	h   hash.Hash
	me  local
	env map[string]bool
}

// field hashes parts length-prefixed, so no two lists hash alike.
func (d *digester) field(parts ...string) {
	for _, p := range parts {
		fmt.Fprintf(d.h, "%d:%s", len(p), p)
	}
	d.h.Write([]byte{'\n'})
}

// file hashes one file and, depth first, every file its Include lines
// match, whether or not the block around them applies.
func (d *digester) file(path string, user bool, depth int) bool {
	if depth > maxIncludeDepth {
		return false
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.field("missing", path)
		return true
	case errors.Is(err, syscall.EISDIR):
		d.field("directory", path)
		return true
	case err != nil:
		return false
	}
	d.field("file", path, string(data))
	for _, l := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(l, 0); i >= 0 {
			l = l[:i]
		}
		for _, m := range envRef.FindAllStringSubmatch(l, -1) {
			d.env[m[1]] = true
		}
		kw, _, args, err := lexLine(l)
		if err != nil || !d.line(kw, args, user, depth) {
			return false
		}
	}
	return true
}

func (d *digester) line(kw string, args []string, user bool, depth int) bool {
	switch kw {
	case "match":
		for _, a := range args {
			if c := asciiLower(strings.TrimPrefix(a, "!")); c == "exec" || c == "localnetwork" {
				return false
			}
		}
	case "canonicalizehostname":
		if len(args) > 0 && asciiLower(args[0]) != "no" && asciiLower(args[0]) != "false" {
			return false
		}
	case "include":
		for _, a := range args {
			if a == "" || strings.ContainsAny(a, "%$") {
				return false
			}
			matches := globInclude(includePattern(a, user), d.me)
			d.field(append([]string{"include", a}, matches...)...)
			for _, m := range matches {
				if !d.file(m, user, depth+1) {
					return false
				}
			}
		}
	}
	return true
}
