package reclaim

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
)

// Git does not check that an object's content hashes to its name when it
// walks history: an object the agent wrote under the name of a remote tip
// it has not fetched could say the agent's commit is its parent. So when rev-list finds every held
// commit reachable from the tips, the commits that reachability rests on
// (those on a path from a held commit to a tip) are hashed here; one
// whose content is not its name proves nothing.

// verifyAncestry hashes every commit between commits and the tips.
func (h *host) verifyAncestry(ctx context.Context, r repo, commits []localRef, tips map[string]bool) error {
	if len(commits) == 0 {
		return nil
	}
	var in strings.Builder
	for oid := range tips {
		fmt.Fprintln(&in, oid)
	}
	for _, l := range commits {
		fmt.Fprintf(&in, "^%s\n", l.oid)
	}
	out, err := r.git(ctx, h, in.String(), "rev-list", "--ancestry-path", "--ignore-missing", "--stdin")
	if err != nil {
		return err
	}
	path := strings.Fields(string(out))
	for _, oid := range path {
		if !oidRE.MatchString(oid) {
			return fmt.Errorf("git rev-list --ancestry-path: unexpected line %q", oid)
		}
	}
	if len(path) == 0 {
		return nil
	}
	out, err = r.git(ctx, h, strings.Join(path, "\n")+"\n", "cat-file", "--batch")
	if err != nil {
		return err
	}
	return checkBatch(bytes.NewReader(out), path)
}

// checkBatch reads `git cat-file --batch` output for want, in order, and
// hashes each object as git names it.
func checkBatch(out io.Reader, want []string) error {
	br := bufio.NewReader(out)
	for _, oid := range want {
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file --batch: %v", err)
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != oid {
			return fmt.Errorf("git cat-file --batch: unexpected header %.80q for %s", line, oid)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 || size > maxGitFile {
			return fmt.Errorf("git cat-file --batch: bad size in %.80q", line)
		}
		sum := objectHash(len(oid))
		fmt.Fprintf(sum, "%s %d\x00", f[1], size)
		if _, err := io.CopyN(sum, br, size); err != nil {
			return fmt.Errorf("git cat-file --batch: %s: %v", oid, err)
		}
		if nl, err := br.ReadByte(); err != nil || nl != '\n' {
			return fmt.Errorf("git cat-file --batch: %s: no newline after its content", oid)
		}
		if got := hex.EncodeToString(sum.Sum(nil)); got != oid {
			return forged(oid, got)
		}
	}
	return nil
}

// objectHash is the hash of a repository whose object ids are oidLen
// hex digits long.
func objectHash(oidLen int) hash.Hash {
	if oidLen == 64 {
		return sha256.New()
	}
	return sha1.New()
}

func forged(oid, got string) error {
	return fmt.Errorf("object %s does not hash to its name (its content is %s's), so it proves nothing; `git fsck` there names what is forged or corrupt", oid, got)
}
