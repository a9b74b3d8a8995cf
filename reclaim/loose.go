package reclaim

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// A loose object is a file anyone with the checkout's rights can write,
// and git reads it unchecked wherever no pack holds the name: a copy of
// another object's file in place of the HEAD commit's (a small fetch
// leaves objects loose), or of a tree, would make status compare with
// whatever it says. So every
// loose object of the repository (and of those it borrows from) is
// hashed before git runs there. Packs are written by git, which names
// each object by its content as it indexes them; verify.go checks the
// commits the pushed check rests on, wherever they are.

// maxAlternateDepth: git reads the alternates of alternates, this deep.
const maxAlternateDepth = 5

// checkLooseObjects hashes each loose object of g, and of every store it
// borrows from, directly or through another.
func (h *host) checkLooseObjects(ctx context.Context, g gitDir) error {
	own := filepath.Join(g.common, "objects")
	if err := checkStore(ctx, own); err != nil {
		return err
	}
	seen, level := map[string]bool{own: true}, []string{own}
	for range maxAlternateDepth + 1 {
		var next []string
		for _, objects := range level {
			alts, err := alternatesIn(objects)
			if err != nil {
				return err
			}
			for _, a := range alts {
				if seen[a] {
					continue
				}
				seen[a] = true
				if err := h.lentStores.check(ctx, a); err != nil {
					return err
				}
				next = append(next, a)
			}
		}
		level = next
	}
	return nil
}

// stores hashes each object store that checkouts borrow from once per
// call, however many borrow from it (a thousand clones of one mirror).
type stores struct {
	mu    sync.Mutex
	byDir map[string]*storeCheck
}

type storeCheck struct {
	once sync.Once
	err  error
}

func (s *stores) check(ctx context.Context, objects string) error {
	s.mu.Lock()
	if s.byDir == nil {
		s.byDir = map[string]*storeCheck{}
	}
	c := s.byDir[objects]
	if c == nil {
		c = &storeCheck{}
		s.byDir[objects] = c
	}
	s.mu.Unlock()
	c.once.Do(func() { c.err = checkStore(ctx, objects) })
	return c.err
}

// checkStore hashes each loose object in the objects directory, until
// the call's time runs out. Only the fan-out directories it lists are
// read (a small repository has a few of the 256).
func checkStore(ctx context.Context, objects string) error {
	top, err := os.ReadDir(objects)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, t := range top {
		// Upper case counts too: on a case-insensitive filesystem (macOS,
		// ext4 casefold) git opening objects/ab reads what was made as AB.
		fan := t.Name()
		if len(fan) != 2 || strings.Trim(strings.ToLower(fan), "0123456789abcdef") != "" {
			continue // no fan-out directory git would read
		}
		if ctx.Err() != nil {
			return fmt.Errorf("hashing the loose objects of %s: the call's time ran out", objects)
		}
		ents, err := os.ReadDir(filepath.Join(objects, fan))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			// Anything else (tmp_obj_ files of a write in flight) is no
			// object git would read.
			if oid := strings.ToLower(fan + e.Name()); oidRE.MatchString(oid) {
				if err := checkLoose(filepath.Join(objects, fan, e.Name()), oid); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkLoose hashes the loose object at p, which git names oid: its
// inflated content is the "<type> <size>\0" header and the object.
func checkLoose(p, oid string) error {
	f, err := fsx.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	z, done, err := inflate(f)
	if err != nil {
		return fmt.Errorf("%s: %v", p, err)
	}
	defer done()
	sum := objectHash(len(oid))
	if _, err := io.Copy(sum, z); err != nil {
		return fmt.Errorf("%s: %v", p, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != oid {
		return forged(oid, got)
	}
	return nil
}
