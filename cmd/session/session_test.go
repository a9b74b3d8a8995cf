package session

import (
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
)

func TestNewCmdList(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdList, "ls", "--task", "t1", "--refresh"); o.Task != "t1" || !o.Refresh {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdList, "ls", "s1")
}

// show, stop, logs and forward take a session ID (forward a port spec too).
func TestNewCmdSessionVerbs(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdShow, "show", "s1", "--json"); o.ID != "s1" || !o.JSON {
		t.Fatalf("show: %+v", o)
	}
	if o := cmdtest.Parsed(t, NewCmdStop, "stop", "s1"); o.ID != "s1" {
		t.Fatalf("stop: %+v", o)
	}
	o := cmdtest.Parsed(t, NewCmdLogs, "logs", "s1", "-f", "--tail", "20", "--since", "1h", "--timestamps")
	if l := o.Logs; o.ID != "s1" || !l.Follow || l.Tail != 20 || l.Since != time.Hour || !l.Timestamps {
		t.Fatalf("logs: %+v", o)
	}
	if o := cmdtest.Parsed(t, NewCmdForward, "forward", "s1", "8080:3000"); o.ID != "s1" || o.Spec != "8080:3000" {
		t.Fatalf("forward: %+v", o)
	}
	cmdtest.Refused(t, NewCmdShow, "show")
	cmdtest.Refused(t, NewCmdStop, "stop", "s1", "s2")
	cmdtest.Refused(t, NewCmdLogs, "logs")
	cmdtest.Refused(t, NewCmdForward, "forward", "s1")
}
