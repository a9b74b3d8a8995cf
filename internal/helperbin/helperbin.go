// Package helperbin finds, on this machine, the helper binary the CLI
// uploads to a host of a given platform: embedded in a release build,
// beside the CLI (`make build`, `make helpers`), in the user cache where
// `kandev-exec helper fetch` puts it (one directory per CLI version), and
// last the CLI itself for a host of its own platform.
//
// The CLI stays a last resort because it answers the helper's arguments
// too (serve, controller run): a `go install` build then reaches a host
// of its own platform with nothing to fetch, at the price of a larger
// first upload. Any other platform needs a helper from one of the other
// sources, and the error saying so names `helper fetch`.
package helperbin

import (
	"fmt"
	"slices"
	"strings"
)

// Platforms the helper is built for, as GOOS/GOARCH.
var Platforms = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}

// Supported reports whether platform has a helper build.
func Supported(platform string) bool { return slices.Contains(Platforms, platform) }

// Name is the helper's file name for platform, everywhere it is kept on
// this side (embedded, beside the CLI, the cache, a release): a gzip copy
// adds ".gz".
func Name(platform string) string {
	return "kandev-exec-helper-" + strings.ReplaceAll(platform, "/", "-")
}

// Source says where a helper was found.
type Source string

const (
	SourceEmbedded Source = "embedded" // compiled into this CLI (release builds)
	SourceBeside   Source = "beside"   // next to the CLI binary
	SourceCache    Source = "cache"    // the user cache, for this CLI version (helper fetch)
	SourceSelf     Source = "self"     // the CLI itself, for a host of its own platform
)

// UnsupportedPlatformError is a host whose os/arch has no helper build.
type UnsupportedPlatformError struct{ Platform string }

func (e *UnsupportedPlatformError) Error() string {
	return fmt.Sprintf("unsupported remote platform %q — kandev-exec supports linux/{amd64,arm64} and darwin/{amd64,arm64}", e.Platform)
}

// MissingError is a platform no source has a usable helper for.
type MissingError struct {
	Platform string
	Looked   []string // the places searched
	Refused  []string // helpers found but refused by a host, "path (reason)"
	Dev      bool     // a development build: no release to fetch from
}

func (e *MissingError) Error() string {
	msg := fmt.Sprintf("no kandev-exec helper for %s", e.Platform)
	if len(e.Refused) > 0 {
		msg += " that the host accepts: refused " + strings.Join(e.Refused, ", ") + ";"
	}
	msg += " looked in " + strings.Join(e.Looked, ", ") + "; run `kandev-exec helper fetch --platform " + e.Platform + "`"
	if e.Dev {
		msg += " with --from FILE|DIR (a development build has no release to download from), or `make helpers` in the source checkout"
	}
	return msg
}
