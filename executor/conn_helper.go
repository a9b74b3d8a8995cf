package executor

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/remote"
	"github.com/kdlbs/kandev-exec/records"
)

// The helper on a connected host: found, or put in place, once per
// connection (docs/architecture.md, "The CLI and its helper").

// locateHelpers finds the helper binaries on this machine; tests point
// it at real builds, since a test binary is not the CLI.
var locateHelpers = sync.OnceValue(helperbin.Default)

// localPlatform is this binary's platform, as remote.NormalizePlatform
// names it.
var localPlatform = runtime.GOOS + "/" + runtime.GOARCH

// call sends one request to the helper (helperAt root) and reads its
// answer into res, over the connection's conversation with it if it has
// one.
func (hc *hostConn) call(ctx context.Context, root, op string, req, res any) error {
	if handled, err := hc.conv.call(ctx, op, req, res); handled {
		return err
	}
	helper, err := hc.helperAt(ctx, root)
	if err != nil {
		return err
	}
	return remote.Call(ctx, hc.c, hc.host.Name, helper, op, req, res)
}

// helperAt is the helper in place on the host, looked for under root the
// first time it is asked for on this connection; the one found serves
// every root after.
func (hc *hostConn) helperAt(ctx context.Context, root string) (remote.Helper, error) {
	if err := hc.conv.wait(ctx); err != nil {
		return remote.Helper{}, err
	}
	if hc.helper != nil {
		return *hc.helper, nil
	}
	if err := hc.detect(ctx, root); err != nil {
		return remote.Helper{}, err
	}
	helper, _, err := hc.ensureHelper(ctx)
	return helper, err
}

// detect learns the platform and home, makes the workdir root exist and
// checks it and every directory above it and, in the same round trip,
// whether the helper this machine would upload to a host of its own
// platform is in place (hc.info).
func (hc *hostConn) detect(ctx context.Context, root string) error {
	sha := ""
	if local, err := locateHelpers().Find(localPlatform, nil); err == nil {
		sha = local.SHA256
	}
	var err error
	hc.info, err = remote.Detect(ctx, hc.c, root, sha, localPlatform)
	return err
}

// ensureHelper puts the helper in place unless what the host said of
// itself (hc.info) shows it cached and speaking this CLI's protocol;
// uploaded says whether it was sent.
func (hc *hostConn) ensureHelper(ctx context.Context, uploading ...func(sent, total int64)) (helper remote.Helper, uploaded bool, err error) {
	if hc.info.Helper.Usable() {
		helper = hc.info.Helper.Helper
	} else if helper, uploaded, err = hc.e.installer().Ensure(ctx, hc.c, hc.info.Root, hc.info.Platform, hc.info.Helper, uploading...); err != nil {
		return helper, uploaded, err
	}
	hc.helper = &helper
	return helper, uploaded, nil
}

// installer puts helpers found on this machine in place, under this
// state directory's upload locks.
func (e *Executor) installer() remote.Installer {
	return remote.Installer{Helpers: func() *helperbin.Locator { return locateHelpers() }, LocksDir: e.locksDir}
}

// UploadProgress renders bytes sent of total for people.
func UploadProgress(sent, total int64) string {
	return fmt.Sprintf("%s (%.1f of %.1f MB)", StepUploading, float64(sent)/1e6, float64(total)/1e6)
}

// warmHelper is the helper a launch expects cached on h: the local one
// for the platform h was last seen with, this machine's until then.
func warmHelper(h *records.Host) (sha, platform string) {
	platform = cmp.Or(h.Platform, localPlatform)
	local, err := locateHelpers().Find(platform, nil)
	if err != nil {
		return "", ""
	}
	return local.SHA256, platform
}

// notePlatform records the platform the host showed (hc.info) when it
// differs from the one on record, so that its next launch expects the
// helper built for it (warmHelper). It is a hint: a failed write costs
// that launch the slow path, never a wrong answer, so it does not fail
// this one.
func (hc *hostConn) notePlatform(ctx context.Context) {
	platform := hc.info.Platform
	if platform == hc.host.Platform || !helperbin.Supported(platform) {
		return
	}
	_, _ = records.Mutate(context.WithoutCancel(ctx), hc.e.cfg.Store, records.KindHost, hc.host.Name, "host.platform", func(x *records.Host) error {
		if x.Platform == platform {
			return errSettled
		}
		x.Platform = platform
		return nil
	})
}
