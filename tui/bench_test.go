package tui

import (
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// benchModel is a view of n environments on n/20+1 hosts, each with a
// session, every tenth in teardown with a cleanup job, and a full events
// pane, on a 200x60 terminal. It is built in memory: the benchmarks
// measure the view, not the store.
func benchModel(b *testing.B, n int) *Model {
	w := newWorld()
	a := newAffected()
	hosts := n/20 + 1
	for h := 0; h < hosts; h++ {
		name := fmt.Sprintf("host-%04d", h)
		w.set(records.KindHost, name, host(name, records.HostStatuses[h%4], "rack move", "ops", at(-time.Hour), at(time.Hour)), a)
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("t%012d", i)
		hn := fmt.Sprintf("host-%04d", i%hosts)
		tk := task(id, fmt.Sprintf("task-%d", i), hn, records.PhaseReady, time.Duration(i)*time.Second)
		if i%10 == 0 {
			tk.Phase = records.PhaseCleanupPending
			tk.Teardown = &records.Teardown{Step: records.StepDrain, Drain: records.DrainUnreachable, Receipts: []string{"9f86d081884c7d65"}}
			w.set(records.KindJob, id, &records.CleanupJob{ID: id, TaskID: id, Host: hn, State: records.JobRetryWait,
				Attempts: 2, NextAt: at(time.Minute), LastError: "ssh: connection timed out"}, a)
		}
		w.set(records.KindTask, id, tk, a)
		sid := fmt.Sprintf("s%012d", i)
		w.set(records.KindSession, sid, &records.Session{ID: sid, TaskID: id, Host: hn, State: records.SessionRunning}, a)
	}
	w.order()
	var tail []state.Entry
	for i := 0; i < ringCap; i++ {
		d := records.Detail{Host: "host-0000", TaskID: "t000000000000", Phase: "draining", Step: "drain"}
		tail = append(tail, state.Entry{Epoch: 1, Seq: uint64(i + 1), At: t0, Kind: records.KindTask, Name: "t000000000000",
			Type: "task.draining", Detail: records.Event("task.draining", d).Detail})
	}
	m := New(options(nil, nil))
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	m.Update(loadedMsg{world: w, cursor: records.Cursor{Epoch: 1, Seq: ringCap}, tail: tail, at: t0})
	m.focus = paneEnvs
	m.envs.move(n / 2)
	m.fitAll()
	return m
}

// BenchmarkWatchView is the cost of one frame.
func BenchmarkWatchView(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("envs=%d", n), func(b *testing.B) {
			m := benchModel(b, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = m.View()
			}
		})
	}
}

// BenchmarkWatchUpdate is the cost of applying one journal event: a task
// changing phase, read afresh, as a follow delivers it.
func BenchmarkWatchUpdate(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("envs=%d", n), func(b *testing.B) {
			m := benchModel(b, n)
			id := fmt.Sprintf("t%012d", n/3)
			phases := []records.Phase{records.PhaseDraining, records.PhaseReady}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tk := *m.w.tasks[id]
				tk.Phase = phases[i%2]
				d := records.Detail{Host: tk.Host, TaskID: id, Phase: string(tk.Phase)}
				e := state.Entry{Epoch: 1, Seq: m.cursor.Seq + 1, At: t0, Kind: records.KindTask, Name: id,
					Type: "task." + string(tk.Phase), Detail: records.Event("", d).Detail}
				m.Update(followedMsg{gen: m.gen, from: m.cursor, entries: []state.Entry{e},
					changes: []change{{kind: records.KindTask, name: id, v: &tk}}, at: t0})
			}
		})
	}
}
