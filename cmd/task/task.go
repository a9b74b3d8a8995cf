// Package task holds the `task` verbs: launch, ls, show, resume, exec.
package task

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
)

// NewCmdTask is the `task` noun.
func NewCmdTask(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{Use: "task", Short: "Launch, inspect, resume and exec into tasks on SSH hosts"}
	c.AddCommand(NewCmdLaunch(f, nil), NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdResume(f, nil), NewCmdExec(f, nil))
	return c
}

// View is a task as --json prints it (docs/contract.md, "JSON documents").
type View struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Profile   string    `json:"profile"`
	Agent     string    `json:"agent"`
	Host      string    `json:"host"`
	TaskDir   string    `json:"task_dir"`
	Branch    string    `json:"branch"`
	Phase     string    `json:"phase"`
	CreatedAt time.Time `json:"created_at"`
	Sessions  []string  `json:"sessions"`
	Error     string    `json:"error"`
}

func viewOf(t *executor.Task) View {
	v := View{ID: t.ID, Name: t.Name, Profile: t.Profile, Agent: t.Agent, Host: t.Host, TaskDir: t.TaskDir,
		Branch: t.Branch, Phase: t.Phase, CreatedAt: t.CreatedAt, Sessions: t.Sessions, Error: t.Error}
	if v.Sessions == nil {
		v.Sessions = []string{}
	}
	return v
}

// completeTasks completes task IDs from local state (first argument only).
func completeTasks(f *cmdutil.Factory) cobra.CompletionFunc {
	return cmdutil.CompleteNames(f, 1, func(ex *executor.Executor, ctx context.Context) ([]string, error) { return ex.TaskIDs(ctx) })
}

// progress prints launch steps on stderr.
// With --json they are left out: stderr then carries only the error
// envelope, if any.
func progress(w io.Writer, asJSON bool) func(string) {
	if asJSON {
		return nil
	}
	return func(step string) { fmt.Fprintf(w, "• %s\n", step) }
}
