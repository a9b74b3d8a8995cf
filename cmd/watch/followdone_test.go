package watch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// Follow ends when the command it follows returns, having printed what
// the journal held then, even when no event it could wait for came: a
// delete of an absent task writes only forget events, with no phase.
func TestFollowEndsWhenItsCommandReturns(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KANDEV_EXEC_STATE_DIR", dir)
	ios, _, out, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, "test")
	f.AddGlobalFlags(pflag.NewFlagSet("test", pflag.ContinueOnError))
	defer f.Close()
	st, err := f.Store()
	if err != nil {
		t.Fatal(err)
	}
	story(t, st) // t1 is archived at seq 10; t9 drains at seq 11
	since, err := JournalEnd(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- Follow(context.Background(), f, records.Scope{Task: "t1"}, since, nil, done) }()
	ctx := context.Background()
	rec, err := st.Get(ctx, records.KindTask, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, records.KindTask, "t1", rec.Revision, state.Event{Type: "task.forgotten"}); err != nil {
		t.Fatal(err)
	}
	close(done) // the command returned right after its last write
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Follow still follows a minute after its command returned")
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "task.forgotten task/t1") {
		t.Fatalf("printed %q, want the forget event alone", out.String())
	}
}
