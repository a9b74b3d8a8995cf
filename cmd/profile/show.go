package profile

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/profiles"
)

// ShowOptions are `profile show`'s inputs.
type ShowOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Name     string
}

// NewCmdShow is `profile show NAME`.
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Executor: f.Executor}
	return cmdutil.NewShowCmd(f, "profile", "Show a profile as YAML that `profile apply -f` accepts", completeProfiles(f, 1),
		&opts.Name, &opts.JSON, cmdutil.Seam(opts, runF, showRun))
}

// profileYAML is the profile file's layout (docs/profiles.md), in its order.
type profileYAML struct {
	Name           string           `yaml:"name"`
	Host           string           `yaml:"host"`
	WorkdirRoot    string           `yaml:"workdir_root"`
	Shell          string           `yaml:"shell"`
	Env            EnvYAML          `yaml:"env"`
	Repositories   []repositoryYAML `yaml:"repositories"`
	PrepareScript  string           `yaml:"prepare_script"`
	PrepareTimeout string           `yaml:"prepare_timeout,omitempty"`
	CleanupScript  string           `yaml:"cleanup_script"`
	ReclaimTaskDir bool             `yaml:"reclaim_task_dir"`
	ArchiveAfter   string           `yaml:"archive_after,omitempty"`
}

type repositoryYAML struct {
	Name    string  `yaml:"name"`
	URL     string  `yaml:"url"`
	Branch  string  `yaml:"branch,omitempty"`
	Secrets EnvYAML `yaml:"secrets,omitempty"`
}

func toYAML(p *profiles.Profile) profileYAML {
	repos := make([]repositoryYAML, len(p.Repositories))
	for i, r := range p.Repositories {
		repos[i] = repositoryYAML{Name: r.Name, URL: r.URL, Branch: r.Branch, Secrets: r.Secrets}
	}
	return profileYAML{Name: p.Name, Host: p.Host, WorkdirRoot: p.WorkdirRoot, Shell: p.Shell, Env: p.Env,
		Repositories: repos, PrepareScript: p.PrepareScript, PrepareTimeout: p.PrepareTimeout, CleanupScript: p.CleanupScript, ReclaimTaskDir: p.ReclaimTaskDir,
		ArchiveAfter: p.ArchiveAfter}
}

func showRun(ctx context.Context, o *ShowOptions) error {
	return cmdutil.ShowVerb[executor.ProfileView]{
		Show: (*executor.Executor).ShowProfile,
		Text: func(ios *cmdutil.IOStreams, v executor.ProfileView) error {
			return WriteYAML(ios.Out, toYAML(v.Profile), v.Revision, v.UpdatedAt)
		},
	}.Run(ctx, o.IO, o.Executor, o.JSON, o.Name)
}
