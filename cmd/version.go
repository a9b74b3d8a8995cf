package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/internal/buildinfo"
	"github.com/kdlbs/kandev-exec/state"
)

// VersionInfo is what `version --json` prints.
type VersionInfo struct {
	Version       string `json:"version"`
	Commit        string `json:"commit"`
	GoVersion     string `json:"go_version"`
	Platform      string `json:"platform"`
	SchemaVersion int    `json:"state_schema_version"`
}

type versionOptions struct {
	IO      *cmdutil.IOStreams
	JSON    bool
	Version string
	Commit  string
}

func newCmdVersion(f *cmdutil.Factory, runF func(*versionOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts := &versionOptions{IO: f.IO, JSON: f.JSON(), Version: f.Version, Commit: buildinfo.CommitID()}
			if runF != nil {
				return runF(opts)
			}
			return versionRun(opts)
		},
	}
}

func versionRun(o *versionOptions) error {
	info := VersionInfo{Version: o.Version, Commit: o.Commit, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, SchemaVersion: state.SchemaVersion}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, info)
	}
	commit := ""
	if info.Commit != "" {
		commit = ", commit " + info.Commit[:min(12, len(info.Commit))]
	}
	fmt.Fprintf(o.IO.Out, "kandev-exec %s (%s, %s%s)\n", info.Version, info.Platform, info.GoVersion, commit)
	return nil
}
