package task

import (
	"slices"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/records"
)

func TestNewCmdLaunch(t *testing.T) {
	o := cmdtest.Parsed(t, NewCmdLaunch, "launch", "--profile", "prod", "--agent", "claude", "--repo", "git@x:r.git", "--branch", "dev",
		"--name", "fix", "--env", "A=1", "--env", "B=2", "-f", "--", "-p", "fix it")
	l := o.Launch
	if l.Profile != "prod" || l.Agent != "claude" || l.Repo != "git@x:r.git" || l.Branch != "dev" || l.Name != "fix" ||
		!slices.Equal(l.Env, []string{"A=1", "B=2"}) || !slices.Equal(l.Command, []string{"-p", "fix it"}) || !o.Follow {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdLaunch, "launch", "--agent", "claude")
	cmdtest.Refused(t, NewCmdLaunch, "launch", "--profile", "prod", "stray")
}

func TestNewCmdArchiveAndDelete(t *testing.T) {
	o := cmdtest.Parsed(t, NewCmdArchive, "archive", "t1", "--timeout", "30s", "--watch", "--yes")
	if o.ID != "t1" || o.Trigger != records.TriggerArchive || o.Timeout != 30*time.Second || !o.Watch || !o.Yes || o.Factory == nil {
		t.Fatalf("parsed %+v", o)
	}
	if o := cmdtest.Parsed(t, NewCmdDelete, "delete", "t1"); o.Trigger != records.TriggerDelete || o.Timeout != executor.DefaultTeardownBudget || o.Watch {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdArchive, "archive")
	cmdtest.Refused(t, NewCmdDelete, "delete", "t1", "--timeout", "0s")
}

func TestNewCmdResume(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdResume, "resume", "t1", "-f", "--", "claude", "-c"); o.ID != "t1" || !o.Follow || !slices.Equal(o.Command, []string{"claude", "-c"}) {
		t.Fatalf("parsed %+v", o)
	}
	if o := cmdtest.Parsed(t, NewCmdResume, "resume", "t1"); len(o.Command) != 0 || o.Follow {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdResume, "resume")
}

func TestNewCmdShow(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdShow, "show", "t1", "--refresh", "--json"); o.ID != "t1" || !o.Refresh || !o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdShow, "show")
}

func TestNewCmdList(t *testing.T) {
	o := cmdtest.Parsed(t, NewCmdList, "ls", "--host", "prod", "--profile", "web", "--phase", "ready", "--limit", "5")
	if o.Host != "prod" || o.Profile != "web" || o.Phase != "ready" || o.Limit != 5 {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdList, "ls", "t1")
}
