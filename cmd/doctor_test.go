package cmd

import (
	"os"
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
)

// doctor names the store when it is not the state directory's file store,
// and leaves opening it to the run.
func TestNewCmdDoctor(t *testing.T) {
	o := cmdtest.Parsed(t, newCmdDoctor, "doctor", "--json")
	if in := o.Input; in.StateDir != os.Getenv("KANDEV_EXEC_STATE_DIR") || in.StoreName != "" || in.Store != nil || !o.JSON || o.Store == nil {
		t.Fatalf("parsed %+v", o)
	}
	if o := cmdtest.Parsed(t, newCmdDoctor, "doctor", "--store", "etcd://127.0.0.1:2379/team"); o.Input.StoreName != "etcd://127.0.0.1:2379/team" {
		t.Fatalf("parsed %+v", o)
	}
	if o := cmdtest.Parsed(t, newCmdDoctor, "doctor", "--store", "file:/srv/kandev"); o.Input.StoreName != "file:/srv/kandev" {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, newCmdDoctor, "doctor", "now")
	cmdtest.Refused(t, newCmdDoctor, "doctor", "--store", "s3://bucket")
}
