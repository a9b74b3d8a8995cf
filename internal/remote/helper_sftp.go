package remote

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/pkg/sftp"

	"github.com/kdlbs/kandev-exec/ssh"
)

// uploadHelperRaw is the upload for a host without gzip (a minimal image,
// a busybox built without it): the helper travels uncompressed over SFTP
// into a fresh temp file in h's directory, which checkHelper made and
// proved private, then one script checks and installs it exactly as for
// a compressed upload (installScript). Two round trips, and the whole
// binary on the wire: the fallback, not the way.
func uploadHelperRaw(ctx context.Context, c *ssh.Client, gz []byte, h Helper, uploading []func(sent, total int64)) (err error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return fmt.Errorf("decompress the helper: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("decompress the helper: %w", err)
	}
	var sc *sftp.Client
	release, err := c.Session(ctx, func() (err error) { sc, err = sftp.NewClient(c.Client); return err })
	if err != nil {
		return fmt.Errorf("start sftp (the host has no gzip, so the helper goes over SFTP): %w", err)
	}
	defer release()
	defer sc.Close()
	// SFTP calls take no context: closing the client is what ends them.
	stop := context.AfterFunc(ctx, func() { sc.Close() })
	defer stop()
	tmp := path.Join(h.dir(), "."+HelperName+".tmp."+rand.Text())
	dst, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return errors.Join(fmt.Errorf("create %s: %w", tmp, err), ctx.Err())
	}
	created := true
	defer func() {
		if created {
			sc.Remove(tmp)
		}
	}()
	var in io.Reader = bytes.NewReader(raw)
	if len(uploading) > 0 {
		in = &progressReader{r: in, total: int64(len(raw)), report: uploading}
	}
	_, err = io.Copy(dst, in)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", tmp, err), ctx.Err())
	}
	kv, err := runMarked(ctx, c, installScript(h, tmp, `[ -f "$t" ] && [ ! -L "$t" ] || { echo "$t is not the file just sent" >&2; exit 1; }
`))
	if err != nil {
		return fmt.Errorf("install %s: %w", tmp, err)
	}
	if err := installed(kv, h, tmp); err != nil {
		return err
	}
	created = false // renamed into place
	return nil
}
