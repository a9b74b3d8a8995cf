package sweep

import (
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
	"github.com/kdlbs/kandev-exec/executor"
)

func TestNewCmdSweep(t *testing.T) {
	if o := cmdtest.Parsed(t, NewCmdSweep, "sweep"); o.Timeout != executor.DefaultTeardownBudget || o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	if o := cmdtest.Parsed(t, NewCmdSweep, "sweep", "--timeout", "5m", "--json"); o.Timeout != 5*time.Minute || !o.JSON {
		t.Fatalf("parsed %+v", o)
	}
	cmdtest.Refused(t, NewCmdSweep, "sweep", "now")
}
