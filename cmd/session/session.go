// Package session holds the `session` verbs: ls, show, logs, stop,
// forward, wait.
package session

import (
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// NewCmdSession is the `session` noun.
func NewCmdSession(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{Use: "session", Short: "List, follow, wait for, stop and forward to task sessions"}
	c.AddCommand(NewCmdList(f, nil), NewCmdShow(f, nil), NewCmdLogs(f, nil), NewCmdStop(f, nil), NewCmdForward(f, nil), NewCmdWait(f, nil))
	return c
}

// completeSessions completes session IDs from local state (first
// argument only).
func completeSessions(f *cmdutil.Factory) cobra.CompletionFunc { return cmdutil.CompleteSessions(f, 1) }
