// Package helper is `kandev-exec helper`: the helper binaries this CLI
// uploads to hosts.
package helper

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
)

// NewCmdHelper is `helper`.
func NewCmdHelper(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "helper",
		Short: "Manage the helpers uploaded to hosts",
		Long: `kandev-exec runs a small helper binary on each host, uploaded on the first
launch. A release build carries the helper of every supported platform
(linux and darwin, amd64 and arm64); other builds look beside the CLI and in
the user cache, where ` + "`helper fetch`" + ` puts them. Each version's helper stays
on a host under <root>/bin/<sha256>/ until ` + "`helper prune`" + ` removes those no
process there runs.`,
		Args: cmdutil.NoArgs,
	}
	c.AddCommand(NewCmdFetch(f, nil), NewCmdPrune(f, nil))
	return c
}

// FetchOptions are `helper fetch`'s inputs.
type FetchOptions struct {
	IO        *cmdutil.IOStreams
	Settings  func() (*cmdutil.Settings, error)
	JSON      bool
	Platforms []string
	From      string
	Version   string
}

// NewCmdFetch is `helper fetch`.
func NewCmdFetch(f *cmdutil.Factory, runF func(context.Context, *FetchOptions) error) *cobra.Command {
	opts := &FetchOptions{IO: f.IO, Settings: f.Settings}
	c := &cobra.Command{
		Use:   "fetch",
		Short: "Download this version's release helpers into the user cache",
		Long: `Download the helpers of this kandev-exec's release (every supported platform,
or those given with --platform) and keep them in the user cache, where
launches find them. The release's checksums.txt must carry the project's
signature (checksums.txt.sig, made with the kandev-exec release key this CLI
carries), and each helper must match it; a checksums file that is unsigned or
signed by another key, or a helper that does not match, is refused and nothing
is written.

Without network access, point --from at the release's files: a directory
holding the helpers (kandev-exec-helper-OS-ARCH.gz), checksums.txt and
checksums.txt.sig, or one helper file with those two beside it.

The download location is the project's releases; the release-url config key
or KANDEV_EXEC_RELEASE_URL points it at a mirror.`,
		Example: `  kandev-exec helper fetch
  kandev-exec helper fetch --platform linux/arm64
  kandev-exec helper fetch --from ~/Downloads/kandev-exec-helper-linux-amd64.gz`,
		Args: cmdutil.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			opts.JSON, opts.Version = f.JSON(), f.Version
			for _, p := range opts.Platforms {
				if !helperbin.Supported(p) {
					return cmdutil.FlagErrorf("--platform %q: want one of %s", p, strings.Join(helperbin.Platforms, ", "))
				}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return fetchRun(c.Context(), opts)
		},
	}
	c.Flags().StringSliceVar(&opts.Platforms, "platform", nil, "OS/ARCH to fetch, repeatable (default: every supported platform)")
	c.Flags().StringVar(&opts.From, "from", "", "take the helpers from a release's files on disk (a directory, or one helper's .gz)")
	return c
}

func fetchRun(ctx context.Context, o *FetchOptions) error {
	s, err := o.Settings()
	if err != nil {
		return err
	}
	dir, err := helperbin.CacheDir(o.Version)
	if err != nil {
		return fmt.Errorf("locate the user cache: %w", err)
	}
	fe := &helperbin.Fetcher{ReleaseURL: s.ReleaseURL, Version: o.Version, CacheDir: dir}
	var got []helperbin.Fetched
	if o.From != "" {
		got, err = fe.FromPath(o.From, o.Platforms)
	} else {
		platforms := o.Platforms
		if len(platforms) == 0 {
			platforms = helperbin.Platforms
		}
		got, err = fe.Download(ctx, platforms)
	}
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, got)
	}
	for _, g := range got {
		fmt.Fprintf(o.IO.Out, "%s: %s (sha256 %s), verified against %s, signed by the release key\n", g.Platform, g.Path, g.SHA256, helperbin.ChecksumsFile)
	}
	return nil
}
