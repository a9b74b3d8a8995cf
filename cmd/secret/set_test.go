package secret

import (
	"context"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/executor"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/state"
)

// On a terminal the value is read without echo, after a prompt on stderr.
func TestSetReadsHiddenOnATerminal(t *testing.T) {
	dir := t.TempDir()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ios, _, out, errb := cmdutil.Test()
	o := &SetOptions{
		IO: ios,
		Executor: func() (*executor.Executor, error) {
			return executor.New(executor.Config{Store: st, StateDir: dir}), nil
		},
		Name:       "tok",
		ReadHidden: func() ([]byte, error) { return []byte("typed-VALUE"), nil },
	}
	if err := setRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "Value for secret tok (input hidden): ") {
		t.Errorf("no prompt: %q", errb.String())
	}
	if strings.Contains(out.String()+errb.String(), "typed-VALUE") {
		t.Errorf("value echoed: %q %q", out.String(), errb.String())
	}
	ex := executor.New(executor.Config{Store: st, StateDir: dir})
	if v, err := ex.Vault().Reveal(profiles.Ref{Kind: profiles.RefSecret, Name: "tok"}); v != "typed-VALUE" {
		t.Errorf("stored %q (%v)", v, err)
	}
}
