package profile

import (
	"slices"
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
)

func TestNewCmdApply(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdApply, "apply", "--file", "-", "--dry-run"); o.File != "-" || !o.DryRun || o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdApply, "apply", "web.yaml")
}

func TestNewCmdEnv(t *testing.T) {
	o := cmdtest.Parsed(t, NewCmdEnv, "env", "web", "--agent", "claude", "--env", "A=1", "--env", "B=2", "--explain", "--json")
	if o.Env.Profile != "web" || o.Env.Agent != "claude" || !slices.Equal(o.Env.Launch, []string{"A=1", "B=2"}) || !o.Explain || !o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdEnv, "env")
}

func TestNewCmdList(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdList, "list"); o.JSON || o.Executor == nil {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdList, "ls", "web")
}

func TestNewCmdShow(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdShow, "show", "web", "--json"); o.Name != "web" || !o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdShow, "show")
}

func TestNewCmdRemove(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdRemove, "remove", "web", "--yes"); o.Name != "web" || o.Force || !o.Yes {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdRemove, "rm", "web", "api")
}
