package records

import (
	"errors"
	"testing"
	"time"
)

// The expected matrices are written out here independently of the tables
// in the package: every (from, to) pair of every type is checked, so a
// transition added or dropped by mistake fails one of them.

func TestTaskPhaseTransitionsExhaustive(t *testing.T) {
	allowed := map[Phase][]Phase{
		PhaseAllocating:     {PhaseAllocating, PhasePreparing, PhaseDraining, PhaseCleanupPending},
		PhasePreparing:      {PhasePreparing, PhaseReady, PhaseDraining, PhaseCleanupPending},
		PhaseReady:          {PhaseReady, PhasePreparing, PhaseDraining, PhaseCleanupPending},
		PhaseDraining:       {PhaseDraining, PhaseDestroying, PhaseCleanupPending},
		PhaseDestroying:     {PhaseDestroying, PhaseAbsent, PhaseArchived, PhaseCleanupPending},
		PhaseCleanupPending: {PhaseCleanupPending, PhaseDraining},
		PhaseArchived:       {PhaseArchived, PhaseDraining, PhaseAbsent},
		PhaseAbsent:         {PhaseAbsent},
	}
	checkMatrix(t, Phases, allowed, Phase.CanMove)
	// cleanup_pending is reachable from every live phase: a writer whose
	// copy of the record is stale can always record it.
	for _, p := range Phases {
		if p.Live() && !p.CanMove(PhaseCleanupPending) {
			t.Errorf("live phase %s cannot reach cleanup_pending", p)
		}
	}
	task := &Task{ID: "t1", Phase: PhaseAbsent}
	var te *TransitionError
	if err := task.Move(PhaseReady); !errors.As(err, &te) || task.Phase != PhaseAbsent {
		t.Fatalf("absent -> ready: %v, phase %s", err, task.Phase)
	}
}

func TestSessionStateTransitionsExhaustive(t *testing.T) {
	allowed := map[SessionState][]SessionState{
		SessionStarting: {SessionStarting, SessionRunning, SessionExited, SessionStopped, SessionLost, SessionFailed},
		SessionRunning:  {SessionRunning, SessionExited, SessionStopped, SessionLost},
		SessionLost:     {SessionLost, SessionExited, SessionStopped},
		SessionExited:   {SessionExited},
		SessionStopped:  {SessionStopped},
		SessionFailed:   {SessionFailed},
	}
	checkMatrix(t, SessionStates, allowed, SessionState.CanMove)
}

func TestHostStatusTransitionsExhaustive(t *testing.T) {
	allowed := map[HostStatus][]HostStatus{
		HostAdmitted:    {HostAdmitted, HostCordoned, HostDraining, HostQuarantined},
		HostCordoned:    {HostCordoned, HostAdmitted, HostDraining, HostQuarantined},
		HostDraining:    {HostDraining, HostAdmitted, HostCordoned, HostQuarantined},
		HostQuarantined: {HostQuarantined, HostAdmitted},
	}
	checkMatrix(t, HostStatuses, allowed, HostStatus.CanMove)
}

func TestJobStateTransitionsExhaustive(t *testing.T) {
	allowed := map[JobState][]JobState{
		JobPending:   {JobPending, JobRetryWait, JobSucceeded, JobFailed, JobCancelled},
		JobRetryWait: {JobRetryWait, JobPending, JobSucceeded, JobFailed, JobCancelled},
		JobSucceeded: {JobSucceeded, JobPending},
		JobFailed:    {JobFailed, JobPending},
		JobCancelled: {JobCancelled, JobPending},
	}
	checkMatrix(t, JobStates, allowed, JobState.CanMove)
}

func checkMatrix[S ~string](t *testing.T, all []S, allowed map[S][]S, can func(S, S) bool) {
	t.Helper()
	if len(allowed) != len(all) {
		t.Fatalf("expected matrix covers %d of %d values", len(allowed), len(all))
	}
	for _, from := range all {
		want := map[S]bool{}
		for _, to := range allowed[from] {
			want[to] = true
		}
		for _, to := range all {
			if got := can(from, to); got != want[to] {
				t.Errorf("%s -> %s: allowed = %v, want %v", from, to, got, want[to])
			}
		}
	}
}

// A quarantine with a TTL ends by itself; readmitting needs no TTL.
func TestQuarantineTTL(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := &Host{Name: "box", Status: HostAdmitted}
	until := now.Add(time.Hour)
	if err := h.SetStatus(HostQuarantined, "disk failing", "ops", now, &until); err != nil {
		t.Fatal(err)
	}
	if got := h.EffectiveStatus(now.Add(59 * time.Minute)); got != HostQuarantined {
		t.Fatalf("before the TTL: %s", got)
	}
	if got := h.EffectiveStatus(until); got != HostAdmitted {
		t.Fatalf("at the TTL: %s", got)
	}
	// Past the TTL the host is admitted, so it may be cordoned directly.
	if err := h.SetStatus(HostCordoned, "maintenance", "ops", until, nil); err != nil {
		t.Fatal(err)
	}
	if h.StatusUntil != nil || h.StatusReason != "maintenance" || !h.StatusAt.Equal(until) {
		t.Fatalf("after cordon: %+v", h)
	}
	// A quarantined host (no TTL) cannot be cordoned: readmit first.
	h2 := &Host{Name: "box2", Status: HostQuarantined}
	var te *TransitionError
	if err := h2.SetStatus(HostCordoned, "x", "ops", now, nil); !errors.As(err, &te) {
		t.Fatalf("quarantined -> cordoned: %v", err)
	}
}

func TestJobBackoffAndGiveUp(t *testing.T) {
	want := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 12 * time.Hour}
	for i, w := range want {
		if got := Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	j := &CleanupJob{ID: "t1", State: JobPending}
	for n := 1; n <= MaxAttempts; n++ {
		j.Attempts = n
		if j.State == JobRetryWait {
			if j.Due(now) {
				t.Fatalf("attempt %d: due before its time", n)
			}
			now = *j.NextAt
			if !j.Due(now) {
				t.Fatalf("attempt %d: not due at NextAt", n)
			}
		}
		if err := j.Failed("host down", now); err != nil {
			t.Fatal(err)
		}
		if n < MaxAttempts && (j.State != JobRetryWait || !j.NextAt.Equal(now.Add(Backoff(n)))) {
			t.Fatalf("after attempt %d: %+v", n, j)
		}
	}
	if j.State != JobFailed || j.LastError != "host down" || j.Due(now.Add(24*time.Hour)) {
		t.Fatalf("after %d attempts: %+v", MaxAttempts, j)
	}
}
