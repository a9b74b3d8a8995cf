package reclaim

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// HEAD's commit, read from the object store without git, for the status
// read from the files (statusfile.go). Whatever the store says, the
// object read is hashed against its name: one that is not what its name
// says, a delta, or anything this reader does not know is an error, and
// git is asked instead.

// maxCommitSize bounds the commit object read.
const maxCommitSize = 1 << 20

// head is the commit HEAD names, directly or through a branch (loose or
// packed, refs.go's reading), with the refs read for it (nil when HEAD
// names a commit itself); an error when it names none (a branch with no
// commit yet, a reference through another, anything odd).
func (g gitDir) head() (string, map[string]string, error) {
	b, err := readSmallFile(filepath.Join(g.dir, "HEAD"))
	if err != nil {
		return "", nil, err
	}
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return "", nil, errors.New("HEAD is not one line")
	}
	name, symbolic := strings.CutPrefix(s, "ref: ")
	if !symbolic {
		if !oidRE.MatchString(s) {
			return "", nil, fmt.Errorf("HEAD %.80q", s)
		}
		return s, nil, nil
	}
	if !strings.HasPrefix(name, "refs/heads/") {
		return "", nil, fmt.Errorf("HEAD names %.80q", name)
	}
	refs, err := g.refs()
	if err != nil {
		return "", nil, err
	}
	oid, ok := refs[name]
	if !ok {
		return "", nil, fmt.Errorf("%s has no commit", name)
	}
	return oid, refs, nil
}

// commitTree is the tree the commit oid names, read from the objects
// directory: its loose object, else the first pack holding it whole.
func commitTree(objects, oid string) (string, error) {
	body, err := looseObject(objects, oid)
	if errors.Is(err, os.ErrNotExist) {
		body, err = packedObject(objects, oid)
	}
	if err != nil {
		return "", err
	}
	typ, content, ok := bytes.Cut(body, []byte{0})
	if !ok || !bytes.Equal(typ, []byte(fmt.Sprintf("commit %d", len(content)))) {
		return "", fmt.Errorf("object %s is not a commit", oid)
	}
	sum := objectHash(len(oid))
	sum.Write(body)
	if got := hex.EncodeToString(sum.Sum(nil)); got != oid {
		return "", forged(oid, got)
	}
	line, _, _ := bytes.Cut(content, []byte{'\n'})
	tree, ok := bytes.CutPrefix(line, []byte("tree "))
	if !ok || len(tree) != len(oid) || !oidRE.MatchString(string(tree)) {
		return "", fmt.Errorf("commit %s names no tree", oid)
	}
	return string(tree), nil
}

// looseObject is the inflated loose object oid ("<type> <size>\0" and
// its content), os.ErrNotExist when there is none.
func looseObject(objects, oid string) ([]byte, error) {
	f, err := fsx.OpenFile(filepath.Join(objects, oid[:2], oid[2:]), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, done, err := inflate(f)
	if err != nil {
		return nil, err
	}
	defer done()
	b, err := io.ReadAll(io.LimitReader(z, maxCommitSize+64))
	if err == nil && len(b) > maxCommitSize {
		err = fmt.Errorf("object %s is larger than %d bytes", oid, maxCommitSize)
	}
	return b, err
}

// Pack index version 2: magic, version, a 256-entry fan-out, the sorted
// names, their CRCs, their 31-bit offsets (the top bit set: an index
// into the 64-bit offsets that follow).
const (
	idxMagic   = "\xfftOc\x00\x00\x00\x02"
	idxFanout  = 8
	idxNames   = idxFanout + 256*4
	packCommit = 1
)

// packedObject is the commit oid as the first pack whose index names it
// stores it, as a loose object would hold it.
func packedObject(objects, oid string) ([]byte, error) {
	raw, err := hex.DecodeString(oid)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(objects, "pack")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(name, "pack-") {
			continue
		}
		off, found, err := packOffset(filepath.Join(dir, e.Name()), raw)
		if err != nil {
			return nil, err
		}
		if found {
			return packEntry(filepath.Join(dir, name+".pack"), off, oid)
		}
	}
	return nil, fmt.Errorf("object %s is in no loose file or pack of %s", oid, objects)
}

// packOffset looks raw up in the pack index at p.
func packOffset(p string, raw []byte) (int64, bool, error) {
	f, err := fsx.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	head := make([]byte, idxNames)
	if _, err := f.ReadAt(head, 0); err != nil || string(head[:idxFanout]) != idxMagic {
		return 0, false, fmt.Errorf("%s is not a version 2 pack index", p)
	}
	fan := func(i int) uint32 { return binary.BigEndian.Uint32(head[idxFanout+4*i:]) }
	lo, hi, n := uint32(0), fan(int(raw[0])), fan(255)
	if raw[0] > 0 {
		lo = fan(int(raw[0]) - 1)
	}
	if lo > hi || hi > n {
		return 0, false, fmt.Errorf("%s: fan-out out of order", p)
	}
	name := make([]byte, len(raw))
	for lo < hi {
		mid := lo + (hi-lo)/2
		if _, err := f.ReadAt(name, idxNames+int64(mid)*int64(len(raw))); err != nil {
			return 0, false, fmt.Errorf("%s: %v", p, err)
		}
		switch c := bytes.Compare(name, raw); {
		case c < 0:
			lo = mid + 1
		case c > 0:
			hi = mid
		default:
			return entryOffset(f, p, int64(n), int64(mid), int64(len(raw)))
		}
	}
	return 0, false, nil
}

func entryOffset(f *os.File, p string, n, i, hashLen int64) (int64, bool, error) {
	var b [8]byte
	off32 := idxNames + n*hashLen + n*4
	if _, err := f.ReadAt(b[:4], off32+4*i); err != nil {
		return 0, false, fmt.Errorf("%s: %v", p, err)
	}
	off := binary.BigEndian.Uint32(b[:4])
	if off&0x80000000 == 0 {
		return int64(off), true, nil
	}
	if _, err := f.ReadAt(b[:], off32+4*n+8*int64(off&0x7fffffff)); err != nil {
		return 0, false, fmt.Errorf("%s: %v", p, err)
	}
	big := binary.BigEndian.Uint64(b[:])
	if big > 1<<62 {
		return 0, false, fmt.Errorf("%s: offset %d", p, big)
	}
	return int64(big), true, nil
}

// packEntry reads the object at off in the pack at p: a commit stored
// whole (a delta is git's to resolve).
func packEntry(p string, off int64, oid string) ([]byte, error) {
	f, err := fsx.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hdr [16]byte
	n, err := f.ReadAt(hdr[:], off)
	if n == 0 {
		return nil, fmt.Errorf("%s: offset %d: %v", p, off, err)
	}
	typ, size, used := int(hdr[0]>>4&7), uint64(hdr[0]&15), 1
	for shift := 4; hdr[used-1]&0x80 != 0; shift += 7 {
		if used == n || shift > 56 {
			return nil, fmt.Errorf("%s: offset %d: bad object header", p, off)
		}
		size |= uint64(hdr[used]&0x7f) << shift
		used++
	}
	if typ != packCommit || size > maxCommitSize {
		return nil, fmt.Errorf("%s: object %s is stored as type %d, %d bytes", p, oid, typ, size)
	}
	z, done, err := inflate(io.NewSectionReader(f, off+int64(used), 1<<40))
	if err != nil {
		return nil, fmt.Errorf("%s: object %s: %v", p, oid, err)
	}
	defer done()
	body := append([]byte("commit "+strconv.FormatUint(size, 10)+"\x00"), make([]byte, size)...)
	if _, err := io.ReadFull(z, body[len(body)-int(size):]); err != nil {
		return nil, fmt.Errorf("%s: object %s: %v", p, oid, err)
	}
	return body, nil
}
