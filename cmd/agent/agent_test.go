package agent

import (
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
)

func TestNewCmdApply(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdApply, "apply", "-f", "claude.yaml", "--json"); o.File != "claude.yaml" || !o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdApply, "apply", "claude.yaml")
}

func TestNewCmdList(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdList, "ls", "--json"); !o.JSON || o.Executor == nil {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdList, "list", "claude")
}

func TestNewCmdShow(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdShow, "show", "claude"); o.Name != "claude" || o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdShow, "show", "claude", "codex")
}

func TestNewCmdRemove(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdRemove, "rm", "claude", "--force"); o.Name != "claude" || !o.Force || o.Yes {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdRemove, "remove")
}
