package etcdstore

import (
	"context"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
)

// A prefix nothing was written under yet (an open that failed before it
// made the journal counter) is diagnosed as such, and diagnosing it
// writes nothing there.
func TestDiagnoseEmptyPrefix(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cfg := Config{Endpoints: c.Endpoints(), Prefix: "/doc"}
	for range 2 {
		var got string
		for _, f := range diagnose(context.Background(), cfg) {
			if f.Name == "store journal" {
				got = f.Status + ": " + f.Detail
			}
		}
		if !strings.HasPrefix(got, "ok: ") || !strings.Contains(got, "/doc/ holds no store yet") {
			t.Fatalf("store journal = %q", got)
		}
	}
}
