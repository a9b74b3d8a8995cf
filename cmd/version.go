package cmd

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/internal/buildinfo"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/state"
)

// VersionInfo is what `version --json` prints.
type VersionInfo struct {
	Version       string `json:"version"`
	Commit        string `json:"commit"`
	GoVersion     string `json:"go_version"`
	Platform      string `json:"platform"`
	SchemaVersion int    `json:"state_schema_version"`
	Protocol      int    `json:"helper_protocol"`
	// Helpers are the helper binaries compiled into this build, one per
	// platform ([] for `go install` and `make build`).
	Helpers []helperbin.EmbeddedHelper `json:"helpers"`
}

type versionOptions struct {
	IO      *cmdutil.IOStreams
	JSON    bool
	Version string
	Commit  string
}

func newCmdVersion(f *cmdutil.Factory, runF func(context.Context, *versionOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long:  "Print the version; --json adds the commit, the helper protocol and the helpers embedded for each host platform.",
		Args:  cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts := &versionOptions{IO: f.IO, JSON: f.JSON(), Version: f.Version, Commit: buildinfo.CommitID()}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return versionRun(opts)
		},
	}
}

func versionRun(o *versionOptions) error {
	helpers, err := helperbin.Embedded()
	if err != nil {
		return err
	}
	info := VersionInfo{Version: o.Version, Commit: o.Commit, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, SchemaVersion: state.SchemaVersion, Protocol: protocol.Protocol(), Helpers: helpers}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, info)
	}
	commit := ""
	if info.Commit != "" {
		commit = ", commit " + info.Commit[:min(12, len(info.Commit))]
	}
	fmt.Fprintf(o.IO.Out, "kandev-exec %s (%s, %s%s)\n", info.Version, info.Platform, info.GoVersion, commit)
	if len(helpers) > 0 {
		var ps []string
		for _, h := range helpers {
			ps = append(ps, h.Platform)
		}
		fmt.Fprintf(o.IO.Out, "helpers embedded for %s\n", strings.Join(ps, ", "))
	}
	return nil
}
