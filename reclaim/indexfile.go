package reclaim

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/internal/gitsafe"
)

// The index file read here instead of by a `git ls-files` per checkout
// (half the git processes of a clean directory's proof). It is the
// agent's file, so the reader answers only when it reads what git would
// list: anything it does not know the way git does (a split or sparse
// index, sparse-checkout settings, a required extension, a layout git
// reads by offsets it keeps, any odd field) is an error, and the caller
// asks git instead, as before. Where git itself would fail, that run
// fails and the proof ends unknown. A checksum that does not match ends
// it unknown at once: git does not check it, and may read a file cut short
// as whatever its bytes say (errIndexChecksum).

// Index layout: a 12-byte header ("DIRC", version, entry count), the
// entries, the extensions, the hash of all that.
const (
	indexHeaderLen = 12
	ceStatLen      = 40 // ctime, mtime (seconds, nanoseconds), dev, ino, mode, uid, gid, size
	ceNameMask     = 0x0fff
	ceStageMask    = 0x3000
	ceExtended     = 0x4000
	ceValid        = 0x8000 // assume-unchanged
	// Extended flags: skip-worktree and intent-to-add are all git
	// knows; any other bit makes it die.
	ceSkipWorktree = 0x4000
	ceExtKnown     = 0x6000
	// An end-of-entries extension sits this far before the checksum:
	// git, reading with threads, takes its offsets from it.
	eoieFromEnd = 4 + 4 + 4 + 20
)

// errIndexChecksum: the file is not what git wrote, and what git would
// make of it is not worth asking.
var errIndexChecksum = errors.New("index checksum mismatch")

// sparseKeys change what git reads from an index with no sparse-checkout
// patterns: core.sparseCheckout alone makes it clear skip-worktree from
// the files present, and a sparse index needs all three.
var sparseKeys = map[string]bool{"core.sparsecheckout": true, "core.sparsecheckoutcone": true, "index.sparse": true}

// indexModes are the modes git writes for the entries it compares;
// anything else (a sparse directory's 040000 among them) is git's to
// read.
var indexModes = map[uint32]bool{0o100644: true, 0o100755: true, 0o120000: true, 0o160000: true}

// readIndexFile is the index of the checkout whose gitdir is g as `git
// ls-files -s -v` lists it, read from the file. cfg is the repository's
// configuration, head the commit status named (its length is the hash's).
// An error says why the file is git's to read; errIndexChecksum, that it
// is no one's.
func readIndexFile(g gitDir, cfg gitsafe.Config, head string) (map[string]indexEntry, error) {
	hashLen, err := indexHashLen(cfg, filepath.Join(g.common, "config"))
	if err != nil {
		return nil, err
	}
	if head != "" && len(head) != 2*hashLen {
		return nil, fmt.Errorf("HEAD %s is not a %d-byte hash", head, hashLen)
	}
	sparse := sparseSetting(g, cfg)
	b, err := fsx.ReadFileMax(filepath.Join(g.dir, "index"), maxGitFile)
	switch {
	case errors.Is(err, fs.ErrNotExist) && sparse == nil:
		return map[string]indexEntry{}, nil // no index yet: git lists nothing
	case err != nil:
		return nil, errors.Join(sparse, err)
	case sparse != nil && len(b) >= indexHeaderLen+hashLen && checkSum(b, hashLen) != nil:
		return nil, errIndexChecksum // never git's to read, sparse or not
	case sparse != nil:
		return nil, sparse
	}
	return parseIndex(b, hashLen)
}

// sparseSetting says why git, sparse checkout on, may read the index
// otherwise than the file says (nil: it will not).
func sparseSetting(g gitDir, cfg gitsafe.Config) error {
	for _, e := range cfg {
		if sparseKeys[e.Key()] {
			return fmt.Errorf("%s is set (%s)", e.Key(), e.Where)
		}
	}
	// With sparse-checkout patterns git may collapse a full index into
	// sparse directories as it reads it, and list their trees' entries.
	for _, d := range g.dirs() {
		if ok, err := exists(filepath.Join(d, "info", "sparse-checkout")); err != nil || ok {
			return errors.Join(err, errors.New("the checkout has sparse-checkout patterns"))
		}
	}
	return nil
}

// indexHashLen is the byte length of the repository's object ids: SHA-1
// unless the common config (where git reads extensions, and only in a
// version 1 repository) names another.
func indexHashLen(cfg gitsafe.Config, common string) (int, error) {
	var format, version string
	for _, e := range cfg {
		inCommon := strings.HasPrefix(e.Where, common+":")
		switch e.Key() {
		case "extensions.objectformat":
			if !inCommon || !e.HasValue || (format != "" && e.Value != format) {
				return 0, fmt.Errorf("extensions.objectformat at %s", e.Where)
			}
			format = e.Value
		case "core.repositoryformatversion":
			if inCommon {
				version = e.Value
			}
		}
	}
	switch {
	case format == "":
		return 20, nil
	case version != "1":
		return 0, fmt.Errorf("extensions.objectformat in a repository of version %q", version)
	case format == "sha1":
		return 20, nil
	case format == "sha256":
		return 32, nil
	}
	return 0, fmt.Errorf("unknown object format %q", format)
}

// parseIndex reads an index file whose object ids are hashLen bytes.
func parseIndex(b []byte, hashLen int) (map[string]indexEntry, error) {
	return parseIndexStat(b, hashLen, nil)
}

// parseIndexStat is parseIndex, and when stats is not nil, fills it with
// each entry's stat data as git recorded it, in the file's order.
func parseIndexStat(b []byte, hashLen int, stats *[]indexStat) (map[string]indexEntry, error) {
	if len(b) < indexHeaderLen+hashLen {
		return nil, errors.New("index shorter than its header")
	}
	version := binary.BigEndian.Uint32(b[4:])
	if string(b[:4]) != "DIRC" || version < 2 || version > 4 {
		return nil, fmt.Errorf("index header %x", b[:8])
	}
	if err := checkSum(b, hashLen); err != nil {
		return nil, err
	}
	body := b[:len(b)-hashLen]
	if n := len(b) - hashLen - eoieFromEnd; n >= indexHeaderLen && string(b[n:n+4]) == "EOIE" {
		return nil, errors.New("index with an end-of-entries extension")
	}
	count := int(binary.BigEndian.Uint32(b[8:]))
	idx := make(map[string]indexEntry, min(count, len(body)/(ceStatLen+hashLen+4)))
	off, prev := indexHeaderLen, ""
	for i := range count {
		e, name, size, err := parseEntry(body[off:], version, hashLen, prev, i == 0)
		if err != nil {
			return nil, fmt.Errorf("index entry %d: %v", i, err)
		}
		idx[name] = e // the last of a path's stages wins, as in parseLsFiles
		if stats != nil {
			*stats = append(*stats, statOfEntry(body[off:], name, hashLen))
		}
		off, prev = off+size, name
	}
	if err := checkExtensions(body[off:]); err != nil {
		return nil, err
	}
	return idx, nil
}

// checkSum: b ends in the hash of the rest, or in zeros (written with
// index.skipHash, which git accepts).
func checkSum(b []byte, hashLen int) error {
	body, sum := b[:len(b)-hashLen], b[len(b)-hashLen:]
	if isZero(sum) {
		return nil
	}
	h := objectHash(2 * hashLen)
	h.Write(body)
	if !bytes.Equal(h.Sum(nil), sum) {
		return errIndexChecksum
	}
	return nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// parseEntry reads the entry at the start of b: what ls-files prints of
// it, its path, and how many bytes it takes. prev is the previous
// entry's path (version 4 stores each path as a change to it).
func parseEntry(b []byte, version uint32, hashLen int, prev string, first bool) (indexEntry, string, int, error) {
	p := ceStatLen + hashLen + 2
	if len(b) < p+2 {
		return indexEntry{}, "", 0, errors.New("truncated")
	}
	mode := binary.BigEndian.Uint32(b[24:])
	flags := binary.BigEndian.Uint16(b[p-2:])
	var ext uint16
	if flags&ceExtended != 0 {
		ext = binary.BigEndian.Uint16(b[p:])
		p += 2
	}
	if ext&^ceExtKnown != 0 || !indexModes[mode] {
		return indexEntry{}, "", 0, fmt.Errorf("mode %o, extended flags %#x", mode, ext)
	}
	name, size, err := entryName(b, p, int(flags&ceNameMask), version, prev, first)
	if err != nil {
		return indexEntry{}, "", 0, err
	}
	tag := byte('H')
	switch {
	case flags&ceStageMask != 0:
		tag = 'M'
	case ext&ceSkipWorktree != 0:
		tag = 'S'
	}
	if flags&ceValid != 0 {
		tag += 'a' - 'A'
	}
	e := indexEntry{mode: fmt.Sprintf("%06o", mode), oid: hex.EncodeToString(b[ceStatLen : ceStatLen+hashLen]), tag: tag}
	return e, name, size, nil
}

// entryName reads the path of the entry in b whose name field starts at
// p; nameLen is the length its flags give (ceNameMask: that or longer).
func entryName(b []byte, p, nameLen int, version uint32, prev string, first bool) (string, int, error) {
	keep := 0
	if version == 4 {
		strip, n, ok := gitVarint(b[p:])
		if !ok || !first && strip > uint64(len(prev)) {
			return "", 0, errors.New("bad path prefix")
		}
		if !first { // the first entry has no previous path to strip
			keep = len(prev) - int(strip)
		}
		p += n
	}
	end := bytes.IndexByte(b[p:], 0)
	switch {
	case end < 0:
		return "", 0, errors.New("unterminated path")
	case nameLen == ceNameMask && keep+end < ceNameMask, nameLen != ceNameMask && keep+end != nameLen:
		return "", 0, errors.New("path length differs from its flags")
	case keep+end == 0:
		return "", 0, errors.New("empty path")
	}
	name := prev[:keep] + string(b[p:p+end])
	if version == 4 {
		return name, p + end + 1, nil
	}
	size := (p + end + 8) &^ 7 // NUL-padded to a multiple of eight
	if size > len(b) {
		return "", 0, errors.New("truncated padding")
	}
	return name, size, nil
}

// gitVarint decodes git's offset varint (each continuation adds one),
// failing where git's would overflow.
func gitVarint(b []byte) (uint64, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	c, i := b[0], 1
	v := uint64(c & 0x7f)
	for c&0x80 != 0 {
		v++
		if v == 0 || v>>57 != 0 || i == len(b) {
			return 0, 0, false
		}
		c = b[i]
		i++
		v = v<<7 + uint64(c&0x7f)
	}
	return v, i, true
}

// checkExtensions walks the extensions between the entries and the
// checksum: each must fit, and be one git may ignore (its signature
// starts with 'A'..'Z'). A split index ("link") or a sparse one ("sdir")
// changes what the entries are.
func checkExtensions(b []byte) error {
	for len(b) > 0 {
		if len(b) < 8 || uint64(binary.BigEndian.Uint32(b[4:])) > uint64(len(b)-8) {
			return errors.New("index extensions do not fit the file")
		}
		if sig := b[:4]; sig[0] < 'A' || sig[0] > 'Z' {
			return fmt.Errorf("index extension %q", sig)
		}
		b = b[8+binary.BigEndian.Uint32(b[4:]):]
	}
	return nil
}
