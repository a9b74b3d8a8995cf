package secret

import (
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
)

func TestNewCmdSet(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdSet, "set", "tok", "--from-file", "v.txt"); o.Name != "tok" || o.FromFile != "v.txt" {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdSet, "set")
	// A value pasted as an argument is refused before anything reads it.
	cmdtest.Refused(t, NewCmdSet, "set", "tok", "hunter2")
}

func TestNewCmdList(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdList, "ls", "--json"); !o.JSON || o.Executor == nil {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdList, "ls", "tok")
}

func TestNewCmdRemove(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdRemove, "rm", "tok", "--yes"); o.Name != "tok" || !o.Yes {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdRemove, "rm")
}
