package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kdlbs/kandev-exec/internal/termsafe"
	"github.com/kdlbs/kandev-exec/records"
)

var hostCols = []column{
	{title: "NAME", min: 8, want: 12},
	{title: "STATUS", min: 11, want: 11},
	{title: "REASON", min: 8, want: 30, flex: true},
	{title: "BY", min: 6, want: 10, drop: 3},
	{title: "SINCE", min: 5, want: 6, drop: 2},
	{title: "TTL", min: 6, want: 7},
	{title: "SESS", min: 4, want: 4, drop: 1},
	{title: "PEND", min: 4, want: 4},
}

const hostStatusCol = 1

// envCols: the task's identity (ID, name, host) and phase are never
// dropped, only cut; on a narrow terminal the receipt, the attempts, the
// step, the drain and the retry go first, in that order, the error last.
var envCols = []column{
	{title: "TASK", min: 13, want: 13},
	{title: "NAME", min: 8, want: 16},
	{title: "HOST", min: 6, want: 12},
	{title: "PHASE", min: 15, want: 15},
	{title: "DRAIN", min: 8, want: 13, drop: 3},
	{title: "RECEIPT", min: 8, want: 11, drop: 6},
	{title: "STEP", min: 7, want: 14, drop: 4},
	{title: "ATT", min: 3, want: 3, drop: 5},
	{title: "RETRY", min: 8, want: 9, drop: 2},
	{title: "ERROR", min: 12, want: 40, flex: true, drop: 1},
}

const envPhaseCol = 3

// hostCells is a host's row at now.
func (w *world) hostCells(name string, now time.Time) ([]string, tone) {
	h := w.hosts[name]
	st := h.EffectiveStatus(now)
	reason, by, since, ttl := termsafe.Line(h.StatusReason), termsafe.Line(h.StatusBy), "-", "-"
	if st != h.Status && h.Status != "" {
		// A quarantine whose TTL ran out: over, though no write said so yet.
		reason, by = "quarantine TTL ran out", "-"
	}
	if h.StatusAt != nil && st != records.HostAdmitted {
		since = age(now.Sub(*h.StatusAt))
	}
	if st == records.HostQuarantined {
		ttl = "none"
		if h.StatusUntil != nil {
			ttl = short(h.StatusUntil.Sub(now))
		}
	}
	return []string{name, string(st), dash(reason), dash(by), since, ttl,
		strconv.Itoa(w.running[name]), strconv.Itoa(w.pending[name])}, hostTone(st)
}

// envCells is a task environment's row at now.
func (w *world) envCells(id string, now time.Time) ([]string, tone) {
	t := w.tasks[id]
	drain, receipt, step := "-", "-", "-"
	if td := t.Teardown; td != nil {
		drain, step = dash(string(td.Drain)), dash(td.Step)
		if len(td.Receipts) > 0 {
			receipt = shortReceipt(td.Receipts[0])
			if len(td.Receipts) > 1 {
				receipt += fmt.Sprintf("+%d", len(td.Receipts)-1)
			}
		}
	}
	att, retry := "-", "-"
	if j := w.job(id); j != nil {
		att = fmt.Sprintf("%d/%d", j.Attempts, records.MaxAttempts)
		switch j.State {
		case records.JobPending:
			retry = "due"
		case records.JobRetryWait:
			retry = "due"
			if j.NextAt != nil && j.NextAt.After(now) {
				retry = "in " + short(j.NextAt.Sub(now))
			}
		case records.JobFailed:
			retry = "gave up"
		case records.JobSucceeded:
			retry = "done"
		}
	}
	errText, _ := w.envError(id)
	return []string{id, dash(termsafe.Line(t.Name)), t.Host, string(t.Phase), drain, receipt, step, att, retry,
		dash(termsafe.Line(firstLine(errText)))}, phaseTone(t.Phase, w.job(id))
}

// envError is what went wrong with a task, for the ERROR column: its
// cleanup job's last error, else its own, else, for a teardown stopped in
// cleanup_pending, why. In any other phase a teardown's reason is a note
// (why the directory stays, what the drain found), which the detail view
// shows and the table does not.
func (w *world) envError(id string) (errText, note string) {
	t := w.tasks[id]
	errText = t.Error
	if j := w.job(id); j != nil && j.LastError != "" {
		errText = j.LastError
	}
	if td := t.Teardown; td != nil && td.Reason != "" {
		switch {
		case t.Phase != records.PhaseCleanupPending:
			note = td.Reason
		case errText == "":
			errText = td.Reason
		}
	}
	return errText, note
}

// hostText and envText are what the filter matches a row against: the
// words on it that do not tick.
func (w *world) hostText(name string) string {
	h := w.hosts[name]
	return strings.ToLower(strings.Join([]string{name, string(h.Status), h.StatusReason, h.StatusBy}, " "))
}

func (w *world) envText(id string) string {
	t := w.tasks[id]
	parts := []string{id, t.Name, t.Host, string(t.Phase), t.Error}
	if td := t.Teardown; td != nil {
		parts = append(parts, string(td.Drain), td.Step, td.Reason)
	}
	if j := w.job(id); j != nil {
		parts = append(parts, string(j.State), j.LastError)
	}
	return strings.ToLower(strings.Join(parts, " "))
}

func hostTone(s records.HostStatus) tone {
	switch s {
	case records.HostAdmitted:
		return toneGood
	case records.HostCordoned, records.HostDraining:
		return toneWarn
	case records.HostQuarantined:
		return toneBad
	}
	return tonePlain
}

func phaseTone(p records.Phase, j *records.CleanupJob) tone {
	switch {
	case j != nil && j.State == records.JobFailed:
		return toneBad
	case p == records.PhaseReady:
		return toneGood
	case p == records.PhaseDraining, p == records.PhaseDestroying, p == records.PhaseCleanupPending:
		return toneWarn
	case p == records.PhaseArchived, p == records.PhaseAbsent:
		return toneDim
	}
	return tonePlain
}

// eventTone reads an event's type and detail.
func eventTone(typ string, d records.Detail) tone {
	_, what, _ := strings.Cut(typ, ".")
	switch {
	case d.Error != "" || strings.Contains(what, "fail"), what == "quarantined":
		return toneBad
	case what == "cordoned", what == "draining", what == "retry_wait", what == "cleanup_pending":
		return toneWarn
	case what == "admitted", what == "readmitted", what == "uncordoned", what == "absent", what == "archived", what == "succeeded":
		return toneGood
	}
	return tonePlain
}

// short writes a duration in at most two units: 12s, 4m12s, 1h02m, 3d04h.
// A countdown that has run out reads "0s".
func short(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// age writes how long ago, to the minute past the first minute.
func age(d time.Duration) string {
	if d >= time.Minute && d < time.Hour {
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return short(d)
}

func shortReceipt(r string) string {
	rs := []rune(termsafe.Line(r))
	return string(rs[:min(len(rs), 8)])
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
