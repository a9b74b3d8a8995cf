package host

import (
	"slices"
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
)

func TestNewCmdAdd(t *testing.T) {
	o := cmdtest.Parsed(t, NewCmdAdd, "add", "prod", "--alias", "target", "--port", "2222", "--user", "deploy",
		"--identity-file", "a", "--identity-file", "b", "--identities-only", "--proxy-jump", "bastion", "--workdir-root", "~/w", "--json")
	h := o.Host
	if h.Name != "prod" || h.Alias != "target" || h.Port != 2222 || h.User != "deploy" || !slices.Equal(h.IdentityFiles, []string{"a", "b"}) ||
		!h.IdentitiesOnly || h.ProxyJump != "bastion" || h.WorkdirRoot != "~/w" || !o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdAdd, "add")
	cmdtest.Refused(t, NewCmdAdd, "add", "a", "b")
}

func TestNewCmdTest(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdTest, "test", "prod", "staging"); !slices.Equal(o.Names, []string{"prod", "staging"}) || o.All || o.Parallel != 8 {
		t.Fatalf("parsed %+v", o)
	}
	if o := cmdtest.Parsed(t, NewCmdTest, "test", "--all", "--parallel", "2", "--json"); !o.All || o.Parallel != 2 || !o.JSON || len(o.Names) != 0 {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdTest, "test")
	cmdtest.Refused(t, NewCmdTest, "test", "prod", "--all")
	cmdtest.Refused(t, NewCmdTest, "test", "--all", "--parallel", "0")
}

func TestNewCmdTrust(t *testing.T) {
	o := cmdtest.Parsed(t, NewCmdTrust, "trust", "prod", "--fingerprint", "SHA256:a", "--fingerprint", "SHA256:b", "--replace")
	if o.Trust.Name != "prod" || !slices.Equal(o.Trust.Fingerprints, []string{"SHA256:a", "SHA256:b"}) || !o.Trust.Replace || o.Trust.AcceptNew {
		t.Fatalf("parsed %+v", o)
	}
	if o := cmdtest.Parsed(t, NewCmdTrust, "trust", "prod", "--accept-new"); !o.Trust.AcceptNew {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdTrust, "trust", "prod", "--fingerprint", "MD5:a")
	cmdtest.Refused(t, NewCmdTrust, "trust", "prod", "--fingerprint", "SHA256:a", "--accept-new")
	// Without a terminal to ask on, a key is pinned only when named or
	// accepted explicitly.
	cmdtest.Refused(t, NewCmdTrust, "trust", "prod")
}

func TestNewCmdList(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdList, "ls", "--json"); !o.JSON || o.Executor == nil {
		t.Fatalf("parsed %+v", o)
	}
	if o := cmdtest.Parsed(t, NewCmdList, "list"); o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdList, "ls", "prod")
}

func TestNewCmdShow(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdShow, "show", "prod", "--json"); o.Name != "prod" || !o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdShow, "show")
}

func TestNewCmdRemove(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdRemove, "rm", "prod", "--force", "--yes"); o.Name != "prod" || !o.Force || !o.Yes {
		t.Fatalf("parsed %+v", o)
	}
	if o := cmdtest.Parsed(t, NewCmdRemove, "remove", "prod"); o.Force || o.Yes {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdRemove, "rm")
}
