package host

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

// TestOptions are `host test`'s inputs.
type TestOptions struct {
	IO       *cmdutil.IOStreams
	Executor func() (*executor.Executor, error)
	JSON     bool
	Names    []string
	All      bool
	Parallel int
}

// NewCmdTest is `host test NAME...|--all`.
func NewCmdTest(f *cmdutil.Factory, runF func(context.Context, *TestOptions) error) *cobra.Command {
	opts := &TestOptions{IO: f.IO, Executor: f.Executor}
	c := &cobra.Command{
		Use:   "test NAME...|--all",
		Short: "Dial hosts without trusting them: fingerprint, platform, git, helper",
		Long: `Dial each host without trusting anything new and report its host key
fingerprint, platform, git version and whether the helper is cached; what
the host must have (sh, uname, gzip or SFTP, sha256sum or shasum, git),
present or missing, with the profiles that need it; and whether its SSH
server allows port forwarding (without it, sessions are reached through the
helper and only session forward cannot work). A host whose pinned key differs fails with exit code 5. With several hosts,
exit code 3 means some failed and others did not. A name no host has fails
before anything is dialled (exit code 1).

The host is not trusted yet: what it reports is printed with control
characters escaped (\r, \x1b, ...), so it cannot redraw the fingerprint you
compare; --json carries it exact.`,
		Args: func(c *cobra.Command, args []string) error {
			if opts.All == (len(args) > 0) {
				return cmdutil.WithHint(cmdutil.FlagErrorf("host test needs host names or --all (not both)"), "usage: "+c.UseLine())
			}
			return nil
		},
		ValidArgsFunction: cmdutil.CompleteNames(f, 0, hostNames),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Names, opts.JSON = args, f.JSON()
			if opts.Parallel < 1 {
				return cmdutil.FlagErrorf("--parallel must be at least 1, got %d", opts.Parallel)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return testRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.All, "all", false, "test every host")
	c.Flags().IntVar(&opts.Parallel, "parallel", 8, "how many hosts to dial at once")
	return c
}

func testRun(ctx context.Context, o *TestOptions) error {
	ex, err := o.Executor()
	if err != nil {
		return err
	}
	known, err := ex.HostNames(ctx)
	if err != nil {
		return err
	}
	names := o.Names
	if o.All {
		names = known
	} else if err := unknownHost(names, known); err != nil {
		return err
	}
	rows := ex.TestHosts(ctx, names, o.Parallel)
	for i := range rows {
		if rows[i].Err != nil {
			info := cmdutil.Classify(rows[i].Err)
			rows[i].Error = &executor.ErrorView{Code: info.Code, Message: rows[i].Err.Error(), Hint: info.Hint}
		}
	}
	if o.JSON {
		if err := cmdutil.WriteJSON(o.IO.Out, rows); err != nil {
			return err
		}
	} else {
		printTestRows(o.IO, rows)
	}
	return testOutcome(rows, o.JSON)
}

// unknownHost refuses, before anything is dialled, a name no host has: a
// row of "failed" would hide the typo among the hosts that answered.
func unknownHost(names, known []string) error {
	for _, n := range names {
		if !slices.Contains(known, n) {
			return cmdutil.WithHint(&records.NotFoundError{What: "host", Name: n, ListCmd: "host ls"},
				fmt.Sprintf("add it first: `kandev-exec host add %s`", n))
		}
	}
	return nil
}

// printTestRows prints what each host said escaped (cmdutil.Safe): an
// untrusted host must not be able to redraw the row the user compares.
func printTestRows(io *cmdutil.IOStreams, rows []executor.TestResult) {
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	safe := func(s string) string { return cmdutil.Safe(cmdutil.Dash(s)) }
	fmt.Fprintln(tw, "NAME\tADDRESS\tKEY\tPIN\tPLATFORM\tGIT\tHELPER")
	for _, r := range rows {
		pin := "not pinned"
		switch {
		case r.MatchesPin && r.Trust == "ca":
			pin = "CA ok"
		case r.MatchesPin:
			pin = "matches"
		case r.PinnedFingerprint != "":
			pin = "CHANGED"
		}
		if r.Error != nil && r.Fingerprint == "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\tfailed (%s)\n", r.Name, safe(r.Address), r.Error.Code)
			continue
		}
		platform := safe(r.Platform)
		if r.Platform != "" && !r.Supported {
			platform += " (unsupported)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\t%s\t%s\n", r.Name, safe(r.Address), safe(r.KeyType), safe(r.Fingerprint), pin,
			platform, safe(r.GitVersion), safe(r.Helper))
	}
	tw.Flush()
	for _, r := range rows {
		if line := certDetail(r); line != "" {
			fmt.Fprintln(io.Out, line)
		}
		if line := helperDetail(r); line != "" {
			fmt.Fprintln(io.Out, line)
		}
		for _, root := range r.HelperRoots {
			if len(root.Versions) > 1 {
				fmt.Fprintf(io.Out, "%s: %d helper versions under %s: %s; `kandev-exec helper prune --host %s` removes those nothing runs\n",
					r.Name, len(root.Versions), cmdutil.Safe(root.Root+"/bin"), shortVersions(root.Versions), r.Name)
			}
		}
		if line := requirementsDetail(r); line != "" {
			fmt.Fprintln(io.Out, line)
		}
		if r.Error == nil && r.Forwarding == "refused" {
			fmt.Fprintf(io.Out, "%s: the SSH server refuses port forwarding: sessions are reached through the helper, and `session forward` cannot work\n", r.Name)
		}
	}
	for _, r := range rows {
		if r.Error != nil {
			fmt.Fprintln(io.ErrOut, cmdutil.SafeText(r.Error.Message)) // errors name their host
			if r.Error.Hint != "" {
				fmt.Fprintf(io.ErrOut, "  hint: %s\n", cmdutil.SafeText(r.Error.Hint))
			}
		}
	}
}

// certDetail says which CA certified the key a host presented as a
// certificate (the key column is the certified key), "" for a plain key.
func certDetail(r executor.TestResult) string {
	for _, h := range r.Hops {
		if h.Addr == r.Address && h.Cert != nil {
			c := h.Cert
			until := "no expiry"
			if c.ValidBefore != nil {
				until = "until " + cmdutil.Timestamp(*c.ValidBefore)
			}
			return fmt.Sprintf("%s: a host certificate from the CA %s, for %s, %s", r.Name, c.CAFingerprint,
				cmdutil.Safe(strings.Join(c.Principals, ",")), until)
		}
	}
	return ""
}

// helperDetail says, for a host whose helper is not cached everywhere it
// is needed, which local helper would go and where it is missing; ""
// when there is nothing to say.
func helperDetail(r executor.TestResult) string {
	if r.Error != nil || r.Helper == "cached" || r.Helper == "" {
		return ""
	}
	var from string
	switch l := r.HelperLocal; {
	case l != nil && l.Path != "":
		from = fmt.Sprintf("%s, %s (sha256 %.12s),", helperSource(l.Source), cmdutil.Safe(l.Path), l.SHA256)
	case l != nil:
		from = fmt.Sprintf("%s (sha256 %.12s)", helperSource(l.Source), l.SHA256)
	default:
		return fmt.Sprintf("%s: no helper for %s here: %s", r.Name, cmdutil.Safe(r.Platform), cmdutil.SafeText(r.HelperMissing))
	}
	var where []string
	for _, root := range r.HelperRoots {
		if root.Helper == "cached" {
			continue
		}
		w := cmdutil.Safe(root.Root)
		if len(root.Profiles) > 0 {
			w += " (profile " + strings.Join(root.Profiles, ", ") + ")"
		}
		where = append(where, w)
	}
	return fmt.Sprintf("%s: the next launch uploads %s to %s", r.Name, from, strings.Join(where, ", "))
}

// requirementsDetail says what the host has of what kandev-exec needs
// there and what it lacks, with the profiles that need it: "prod: has
// sh, uname, gzip, sha256sum; lacks git (needed by profile web)".
func requirementsDetail(r executor.TestResult) string {
	if r.Error != nil || len(r.Requirements) == 0 {
		return ""
	}
	var has, lacks []string
	for _, q := range r.Requirements {
		name := q.Name
		if q.Present {
			if strings.Contains(name, " or ") {
				name = path.Base(q.Found) // which of the two
			}
			has = append(has, cmdutil.Safe(name))
			continue
		}
		switch len(q.Profiles) {
		case 0:
			name += " (no profile of this host needs it)"
		case 1:
			name += " (needed by profile " + q.Profiles[0] + ")"
		default:
			name += " (needed by profiles " + strings.Join(q.Profiles, ", ") + ")"
		}
		lacks = append(lacks, name)
	}
	line := r.Name + ": has " + cmdutil.Dash(strings.Join(has, ", "))
	if len(lacks) > 0 {
		line += "; lacks " + strings.Join(lacks, ", ")
	}
	return line
}

// helperSource says in words where a local helper comes from (its JSON
// source: embedded, beside, cache or self).
func helperSource(source string) string {
	switch source {
	case "embedded":
		return "the helper built into kandev-exec"
	case "beside":
		return "the helper beside kandev-exec"
	case "cache":
		return "the helper in the user cache"
	case "self":
		return "kandev-exec itself"
	}
	return "the " + source + " helper"
}

// testOutcome: all ok is 0; some failed is 3; all failed with one shared
// class is that class's code (so a single host keeps its own code, e.g. 5).
func testOutcome(rows []executor.TestResult, _ bool) error {
	var errs []error
	for _, r := range rows {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return cmdutil.ItemsOutcome(errs, len(rows), "hosts")
}

// shortVersions names helper versions by the first 12 digits of each.
func shortVersions(vs []string) string {
	short := make([]string, len(vs))
	for i, v := range vs {
		short[i] = fmt.Sprintf("%.12s", v)
	}
	return strings.Join(short, ", ")
}
