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
	return &cobra.Command{
		Use:               "show NAME",
		Short:             "Show a profile as YAML that `profile apply -f` accepts",
		Args:              cmdutil.ExactArgs(1, "profile show needs a NAME"),
		ValidArgsFunction: completeProfiles(f, 1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name, opts.JSON = args[0], f.JSON()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return showRun(c.Context(), opts)
		},
	}
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
		Repositories: repos, PrepareScript: p.PrepareScript, PrepareTimeout: p.PrepareTimeout, CleanupScript: p.CleanupScript, ReclaimTaskDir: p.ReclaimTaskDir}
}

func showRun(ctx context.Context, o *ShowOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	v, err := ex.ShowProfile(ctx, o.Name)
	if err != nil {
		return err
	}
	if o.JSON {
		return cmdutil.WriteJSON(o.IO.Out, v)
	}
	return WriteYAML(o.IO.Out, toYAML(v.Profile), v.Revision, v.UpdatedAt)
}
