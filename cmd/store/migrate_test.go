package store

import (
	"os"
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
)

func TestNewCmdMigrate(t *testing.T) {
	o := cmdtest.Parsed(t, NewCmdMigrate, "migrate", "--to", "etcd://127.0.0.1:2379/team", "--json")
	if want := "file:" + os.Getenv("KANDEV_EXEC_STATE_DIR"); o.From != want || o.To != "etcd://127.0.0.1:2379/team" || !o.JSON {
		t.Fatalf("parsed %+v, want from %s", o, want)
	}
	if o := cmdtest.Parsed(t, NewCmdMigrate, "migrate", "--store", "etcd://127.0.0.1:2379/team", "--to", "file:/srv/backup"); o.From != "etcd://127.0.0.1:2379/team" || o.To != "file:/srv/backup" {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdMigrate, "migrate")
	cmdtest.Refused(t, NewCmdMigrate, "migrate", "--to", "file:")
	cmdtest.Refused(t, NewCmdMigrate, "migrate", "--to", "file:relative/dir")
}
