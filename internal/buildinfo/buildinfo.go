// Package buildinfo is the version both binaries report (the CLI and the
// helper it runs on hosts), set at link time:
//
//	-ldflags "-X github.com/kdlbs/kandev-exec/internal/buildinfo.Version=v1.2.3
//	          -X github.com/kdlbs/kandev-exec/internal/buildinfo.Commit=<sha>"
package buildinfo

import "runtime/debug"

// Version and Commit are set with -ldflags -X; Commit falls back to the
// VCS stamp Go records when building inside a checkout.
var (
	Version = "dev"
	Commit  = ""
)

// CommitID is Commit, else the revision Go stamped into the build.
func CommitID() string {
	if Commit != "" {
		return Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
