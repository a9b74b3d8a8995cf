package host

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/cmd/internal/cmdtest"
)

func TestNewCmdCordon(t *testing.T) {
	var got *CordonOptions
	build := func(f *cmdutil.Factory) *cobra.Command {
		return NewCmdCordon(f, func(_ context.Context, o *CordonOptions) error { got = o; return nil })
	}
	if err := cmdtest.Run(t, build, "cordon", "prod", "--reason", "kernel upgrade", "--json"); err != nil {
		t.Fatal(err)
	}
	if got.Name != "prod" || got.Reason != "kernel upgrade" || !got.JSON {
		t.Fatalf("parsed %+v", got)
	}
	got = nil
	cmdtest.WantUsage(t, cmdtest.Run(t, build, "cordon", "prod"))
	cmdtest.WantUsage(t, cmdtest.Run(t, build, "cordon", "--reason", "x"))
	if got != nil {
		t.Fatal("runF ran on bad usage")
	}
}

func TestNewCmdQuarantine(t *testing.T) {
	var got *QuarantineOptions
	build := func(f *cmdutil.Factory) *cobra.Command {
		return NewCmdQuarantine(f, func(_ context.Context, o *QuarantineOptions) error { got = o; return nil })
	}
	if err := cmdtest.Run(t, build, "quarantine", "prod", "--reason", "disk", "--ttl", "2h"); err != nil {
		t.Fatal(err)
	}
	if got.Name != "prod" || got.Reason != "disk" || got.TTL != 2*time.Hour {
		t.Fatalf("parsed %+v", got)
	}
	if err := cmdtest.Run(t, build, "quarantine", "prod", "--reason", "disk"); err != nil || got.TTL != 0 {
		t.Fatalf("no --ttl: %v, %+v", err, got)
	}
	got = nil
	cmdtest.WantUsage(t, cmdtest.Run(t, build, "quarantine", "prod", "--reason", "disk", "--ttl", "0s"))
	cmdtest.WantUsage(t, cmdtest.Run(t, build, "quarantine", "prod"))
	if got != nil {
		t.Fatal("runF ran on bad usage")
	}
}

func TestNewCmdReadmitAndUncordon(t *testing.T) {
	var readmit *ReadmitOptions
	if err := cmdtest.Run(t, func(f *cmdutil.Factory) *cobra.Command {
		return NewCmdReadmit(f, func(_ context.Context, o *ReadmitOptions) error { readmit = o; return nil })
	}, "readmit", "prod", "--reason", "fixed"); err != nil || readmit.Name != "prod" || readmit.Reason != "fixed" {
		t.Fatalf("readmit: %v %+v", err, readmit)
	}
	cmdtest.WantUsage(t, cmdtest.Run(t, func(f *cmdutil.Factory) *cobra.Command { return NewCmdReadmit(f, nil) }, "readmit", "prod"))
	var uncordon *UncordonOptions
	if err := cmdtest.Run(t, func(f *cmdutil.Factory) *cobra.Command {
		return NewCmdUncordon(f, func(_ context.Context, o *UncordonOptions) error { uncordon = o; return nil })
	}, "uncordon", "prod"); err != nil || uncordon.Name != "prod" {
		t.Fatalf("uncordon: %v %+v", err, uncordon)
	}
}

func TestNewCmdDrain(t *testing.T) {
	var got *DrainOptions
	build := func(f *cmdutil.Factory) *cobra.Command {
		return NewCmdDrain(f, func(_ context.Context, o *DrainOptions) error { got = o; return nil })
	}
	if err := cmdtest.Run(t, build, "drain", "prod"); err != nil {
		t.Fatal(err)
	}
	if got.Name != "prod" || got.Deadline != time.Hour || got.Detach || got.Worker || got.Settings == nil {
		t.Fatalf("defaults %+v", got)
	}
	if err := cmdtest.Run(t, build, "drain", "prod", "--deadline", "10m", "--detach"); err != nil {
		t.Fatal(err)
	}
	if got.Deadline != 10*time.Minute || !got.Detach {
		t.Fatalf("parsed %+v", got)
	}
	got = nil
	cmdtest.WantUsage(t, cmdtest.Run(t, build, "drain", "prod", "--deadline", "0s"))
	cmdtest.WantUsage(t, cmdtest.Run(t, build, "drain"))
	if got != nil {
		t.Fatal("runF ran on bad usage")
	}
}
