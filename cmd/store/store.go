// Package store holds the `store` verbs: migrate.
package store

import (
	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// NewCmdStore is the `store` noun.
func NewCmdStore(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "store",
		Short: "Copy the state store to another backend (file or etcd)",
	}
	c.AddCommand(NewCmdMigrate(f, nil))
	return c
}
