package executor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// statusFixture is an executor over a fresh store with one host, never
// dialled.
func statusFixture(t *testing.T) *Executor {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host box\n  HostName 192.0.2.7\n  User ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(filepath.Join(dir, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := New(Config{Store: st, StateDir: filepath.Join(dir, "state"), SSHConfig: cfg})
	if _, _, err := e.AddHost(context.Background(), AddHostOptions{Name: "box"}); err != nil {
		t.Fatal(err)
	}
	return e
}

func hostRecord(t *testing.T, e *Executor) *records.Host {
	t.Helper()
	h, _, err := e.getHost(context.Background(), "box")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A quarantine given with --ttl is over once the time has passed: launches
// are admitted again. (admitted compared the stored status, so such a
// host refused launches for ever.)
func TestAdmittedOnceQuarantineTTLPassed(t *testing.T) {
	past := time.Now().Add(-time.Minute)
	h := &records.Host{Name: "box", Status: records.HostQuarantined, StatusReason: "flaky", StatusUntil: &past,
		Pins: []records.HopPin{{Address: "192.0.2.7:22", KeyType: "ssh-ed25519", Fingerprint: "SHA256:x"}}}
	if err := admitted(h); err != nil {
		t.Fatalf("quarantine past its end still refuses: %v", err)
	}
	future := time.Now().Add(time.Hour)
	h.StatusUntil = &future
	var re *RefusedError
	if err := admitted(h); !errors.As(err, &re) || re.Status != records.HostQuarantined {
		t.Fatalf("quarantine before its end: %v", err)
	}
}

// Drain evidence quarantines for good: a host an operator quarantined for
// a while takes the evidence and loses the end (else the TTL would
// readmit a host no probe ever checked); one quarantined for good keeps
// its first reason.
func TestEvidenceQuarantineOverridesTTL(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	if _, err := e.QuarantineHost(ctx, "box", "flaky network", time.Hour); err != nil {
		t.Fatal(err)
	}
	e.quarantineHost(ctx, "box", "the drain of task t1 was unreachable", "task archive t1")
	h := hostRecord(t, e)
	if h.Status != records.HostQuarantined || h.StatusUntil != nil || h.StatusReason != "the drain of task t1 was unreachable" {
		t.Fatalf("after evidence: %s until %v reason %q", h.Status, h.StatusUntil, h.StatusReason)
	}
	e.quarantineHost(ctx, "box", "the drain of task t2 was uncertain", "task archive t2")
	if h := hostRecord(t, e); h.StatusReason != "the drain of task t1 was unreachable" || h.StatusBy != "task archive t1" {
		t.Fatalf("second evidence replaced the first: %q by %q", h.StatusReason, h.StatusBy)
	}
}

// Readmit lists the tasks whose cleanup is not done and makes the jobs
// waiting for a retry due now; succeeded jobs are not listed, failed ones
// stay failed.
func TestRetainedTasksBecomeDue(t *testing.T) {
	e := statusFixture(t)
	ctx := context.Background()
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	for _, j := range []records.CleanupJob{
		{ID: "twait", TaskID: "twait", Host: "box", State: records.JobRetryWait, Attempts: 2, NextAt: &later, LastError: "drain unreachable"},
		{ID: "tfail", TaskID: "tfail", Host: "box", State: records.JobFailed, Attempts: 8, LastError: "gave up"},
		{ID: "tdone", TaskID: "tdone", Host: "box", State: records.JobSucceeded},
		{ID: "tother", TaskID: "tother", Host: "elsewhere", State: records.JobRetryWait, NextAt: &later},
	} {
		// Stored as an earlier run of the job left it: a job is created
		// pending (records.Create), then moved.
		data, _ := json.Marshal(&j)
		if _, err := e.cfg.Store.Create(ctx, records.KindJob, j.ID, data, records.EventFor("job.test", &j)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.retainedTasks(ctx, "box", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].TaskID != "tfail" || got[1].TaskID != "twait" {
		t.Fatalf("retained: %+v", got)
	}
	if got[0].Job != records.JobFailed || got[1].Job != records.JobPending || got[1].NextAt != nil || got[1].LastError != "drain unreachable" {
		t.Fatalf("retained: %+v", got)
	}
	other, _, err := records.Get[records.CleanupJob](ctx, e.cfg.Store, records.KindJob, "tother")
	if err != nil || other.State != records.JobRetryWait {
		t.Fatalf("a job on another host moved: %+v %v", other, err)
	}
}
