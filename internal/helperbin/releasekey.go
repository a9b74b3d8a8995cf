package helperbin

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/kdlbs/kandev-exec/internal/sshsig"
)

// ReleaseKey is the public half of the key every release's checksums.txt
// is signed with (`ssh-keygen -Y sign -n kandev-exec-release`). The
// maintainers hold the private half; it is never in the repository
// (docs/security.md).
const ReleaseKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAID1hypg1zD1WKroW1RC4nTDz+ge+5LMae8dpJGX48pXx kandev-exec-release"

// ReleaseNamespace is what a release signature is for: a signature made
// with the same key for anything else does not verify.
const ReleaseNamespace = "kandev-exec-release"

// SignatureFile is the signature of ChecksumsFile, published beside it.
const SignatureFile = ChecksumsFile + ".sig"

// trustedKey is the key a release's signature must be made with.
var trustedKey = mustParseKey(ReleaseKey)

func mustParseKey(authorized string) ssh.PublicKey {
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(authorized))
	if err != nil {
		panic(fmt.Sprintf("release key %q: %v", authorized, err))
	}
	return k
}

// TrustForTesting makes a key the tests generated the trusted release key,
// in a test binary only: a real CLI panics here, so no flag, setting or
// environment variable can change which key its helpers must be signed
// with.
func TrustForTesting(authorizedKey string) {
	if !testing.Testing() {
		panic("helperbin.TrustForTesting called outside a test binary")
	}
	trustedKey = mustParseKey(authorizedKey)
}

// UnsignedError is a checksums file with no signature beside it: nothing
// proves its helpers are the project's, so they are refused.
type UnsignedError struct{ Checksums string }

func (e *UnsignedError) Error() string {
	return fmt.Sprintf("%s is unsigned (no %s beside it): refusing its helpers, which nothing proves are the project's; "+
		"fetch %s from the same release too (a mirror must carry it), or, for a build of your own (`make dist` without "+
		"KANDEV_EXEC_SIGNING_KEY), use its CLIs, which embed every helper, or `make helpers`", e.Checksums, SignatureFile, SignatureFile)
}

// SignatureError is a checksums file whose signature is not the release
// key's over it: another key, another namespace, or an altered file.
type SignatureError struct {
	Signature string // the file or URL of the signature
	Err       error
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("%s does not prove %s is a kandev-exec release: %v; refusing its helpers", e.Signature, ChecksumsFile, e.Err)
}

func (e *SignatureError) Unwrap() error { return e.Err }

// verifySignature checks that sums, read from sumsFrom, carries the
// release key's signature.
func verifySignature(sums []byte, sumsFrom string, get func(name string) ([]byte, string, error)) error {
	sig, from, err := get(SignatureFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &UnsignedError{Checksums: sumsFrom}
	}
	if err != nil {
		return fmt.Errorf("read the release's %s: %w", SignatureFile, err)
	}
	if err := sshsig.Verify(trustedKey, ReleaseNamespace, sums, sig); err != nil {
		return &SignatureError{Signature: from, Err: err}
	}
	return nil
}
