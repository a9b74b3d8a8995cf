package sshtest

import (
	"fmt"
	"strings"
	"time"
)

// Flight is a run of bytes the relay read in one direction, on any of
// its connections, between two runs the other way: a conversation's
// every flight crosses the link once, so its upward flights are its round
// trips. The relay does not delay the TCP handshake, so no flight is it.
type Flight struct {
	Up    bool          // client to server
	Bytes int           // what the run carried
	At    time.Duration // when its first byte was read, since Trace
}

type trace struct {
	start   time.Time
	flights []Flight
}

// Trace starts recording flights afresh; Flights ends it.
func (r *Relay) Trace() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trace = &trace{start: time.Now()}
}

// Flights returns the flights since Trace and stops recording.
func (r *Relay) Flights() []Flight {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.trace == nil {
		return nil
	}
	f := r.trace.flights
	r.trace = nil
	return f
}

func (r *Relay) record(up bool, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.trace
	if t == nil {
		return
	}
	if k := len(t.flights); k > 0 && t.flights[k-1].Up == up {
		t.flights[k-1].Bytes += n
		return
	}
	t.flights = append(t.flights, Flight{Up: up, Bytes: n, At: time.Since(t.start)})
}

// FormatFlights lays flights out one a line: when, which way, how many
// bytes, and the round trip each upward one starts.
func FormatFlights(flights []Flight) string {
	var b strings.Builder
	rt := 0
	for _, f := range flights {
		way := "<-"
		if f.Up {
			rt++
			way = fmt.Sprintf("-> RT %d", rt)
		}
		fmt.Fprintf(&b, "%8.1f ms  %-8s %6d bytes\n", float64(f.At.Microseconds())/1000, way, f.Bytes)
	}
	return b.String()
}
