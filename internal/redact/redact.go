// Package redact masks secret values in output before it is kept anywhere
// (the agent's log on the host, a prepare script's output tail). It runs
// on the remote host too, so it imports nothing of this module.
package redact

import (
	"bytes"
	"io"
	"slices"
	"strings"
)

// Mask is what each stretch of secret bytes becomes.
const Mask = "***"

// MinLen is the shortest secret, and the shortest line of a multi-line
// secret, that is masked, in bytes. A private key or a certificate is
// often printed one line at a time (or a line of it quoted in an error),
// so each line is a secret too. Shorter values and lines are not: a value
// such as "a" or a line such as "}" would mask that text everywhere in the
// output, making it unreadable while hiding almost nothing, because a
// fragment that short carries a few bits at most and cannot be told from
// ordinary text. Unmasked tells such a value, so that a launch can warn.
const MinLen = 4

// Unmasked reports whether a secret is too short to be masked: not empty
// (an empty value shows nothing) and shorter than MinLen.
func Unmasked(secret string) bool { return secret != "" && len(secret) < MinLen }

// Writer masks every occurrence of any secret as Mask in a stream before
// it reaches w. Occurrences that overlap are masked as one stretch, so no
// byte of any of them shows. Bytes that might still begin a secret are
// held back (fewer than the longest secret) until more data or Flush
// decides them: a secret split across writes is masked too, and the
// output is the same however the input is cut into writes. Not safe for
// concurrent use.
type Writer struct {
	w        io.Writer
	patterns [][]byte // longest first, so the longest match is seen first
	pending  []byte   // not yet decided: may begin a secret
	covered  int      // bytes from the start of pending known to be secret
	out      []byte
	flushed  bool
}

// NewWriter masks each secret of at least MinLen bytes (shorter ones pass
// through) and, for each secret of several lines, each of its lines of at
// least MinLen bytes, with surrounding whitespace trimmed.
func NewWriter(w io.Writer, secrets []string) *Writer {
	return &Writer{w: w, patterns: patterns(secrets)}
}

func patterns(secrets []string) [][]byte {
	var out []string
	for _, s := range secrets {
		if len(s) < MinLen {
			continue
		}
		out = append(out, s)
		if !strings.ContainsAny(s, "\r\n") {
			continue
		}
		for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
			if line = strings.TrimSpace(line); len(line) >= MinLen {
				out = append(out, line)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	out = slices.Compact(out)
	ps := make([][]byte, len(out))
	for i, s := range out {
		ps[i] = []byte(s)
	}
	return ps
}

// Write masks what it can decide and passes it on; it always accepts all
// of p unless w fails. After Flush, writes are dropped: a secret begun
// before it would otherwise be out half unmasked.
func (r *Writer) Write(p []byte) (int, error) {
	if r.flushed {
		return len(p), nil
	}
	if len(r.patterns) == 0 {
		return r.w.Write(p)
	}
	r.pending = append(r.pending, p...)
	return len(p), r.drain(false)
}

// Flush writes what is held back, ending the stream: a partial secret at
// its end is not a secret.
func (r *Writer) Flush() error {
	if r.flushed {
		return nil
	}
	r.flushed = true
	return r.drain(true)
}

// drain decides pending from its start up to the first position where a
// secret might still begin, writing literal bytes as they are and each
// stretch of secret bytes as one Mask once it ends.
func (r *Writer) drain(final bool) error {
	p := r.pending
	r.out = r.out[:0]
	lit, i := 0, 0 // p[lit:i] is literal output not yet copied
	for i < len(p) {
		n, undecided := r.match(p[i:], final)
		if undecided {
			break
		}
		if n > r.covered {
			if r.covered == 0 {
				r.out = append(r.out, p[lit:i]...)
			}
			r.covered = n
		}
		i++
		if r.covered > 0 {
			if r.covered--; r.covered == 0 {
				r.out = append(r.out, Mask...)
				lit = i
			}
		}
	}
	if r.covered == 0 {
		r.out = append(r.out, p[lit:i]...)
	}
	r.pending = append(r.pending[:0], p[i:]...)
	if len(r.out) == 0 {
		return nil
	}
	_, err := r.w.Write(r.out)
	return err
}

// match returns the length of the longest secret p starts with that would
// reach past the stretch already covered, or undecided when p is too
// short to tell yet.
func (r *Writer) match(p []byte, final bool) (n int, undecided bool) {
	for _, s := range r.patterns {
		switch {
		case len(s) <= r.covered:
			return 0, false // the rest are no longer
		case bytes.HasPrefix(p, s):
			return len(s), false
		case !final && len(p) < len(s) && bytes.HasPrefix(s, p):
			return 0, true
		}
	}
	return 0, false
}
