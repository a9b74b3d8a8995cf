package remote

import (
	"slices"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/shquote"
)

// ProbeTimeout bounds one bootstrap or helper round trip.
const ProbeTimeout = 30 * time.Second

// unameArch maps what uname -m says to GOARCH, where they differ.
var unameArch = map[string]string{"x86_64": "amd64", "aarch64": "arm64"}

// NormalizePlatform maps uname -s / -m to GOOS/GOARCH names.
func NormalizePlatform(osName, arch string) string {
	o := strings.ToLower(strings.TrimSpace(osName))
	a := strings.ToLower(strings.TrimSpace(arch))
	if goarch, ok := unameArch[a]; ok {
		a = goarch
	}
	return o + "/" + a
}

// platformPattern is a shell case pattern that matches what
// `uname -s`/`uname -m`, lowercased, print on a host of platform, as
// NormalizePlatform reads them.
func platformPattern(platform string) string {
	pats := []string{shquote.Quote(platform)}
	osName, arch, _ := strings.Cut(platform, "/")
	for u, goarch := range unameArch {
		if goarch == arch {
			pats = append(pats, shquote.Quote(osName+"/"+u))
		}
	}
	slices.Sort(pats[1:])
	return strings.Join(pats, "|")
}
