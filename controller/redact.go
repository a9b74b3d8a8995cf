package controller

import (
	"bytes"
	"io"
	"sort"
)

// redactWriter masks every occurrence of any secret as *** in a stream
// before it reaches w. Bytes that might still begin a secret are held back
// (at most len(longest)-1) until more data or flush decides them, so a
// secret split across writes is masked too. Not safe for concurrent use.
type redactWriter struct {
	w       io.Writer
	secrets [][]byte // longest first, so the longest match wins
	pending []byte
	out     []byte
	closed  bool // flushed: later writes are dropped, or a held-back prefix would be out already
}

func newRedactWriter(w io.Writer, secrets []string) *redactWriter {
	r := &redactWriter{w: w}
	for _, s := range secrets {
		if s != "" {
			r.secrets = append(r.secrets, []byte(s))
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

func (r *redactWriter) Write(p []byte) (int, error) {
	if r.closed {
		return len(p), nil
	}
	if len(r.secrets) == 0 {
		return r.w.Write(p)
	}
	r.pending = append(r.pending, p...)
	return len(p), r.drain(false)
}

// flush writes what is held back, ending the stream: a partial secret at
// its end is not a secret.
func (r *redactWriter) flush() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.drain(true)
}

// drain masks and writes pending up to the first position where a secret
// might still complete.
func (r *redactWriter) drain(final bool) error {
	p := r.pending
	r.out = r.out[:0]
	start, i := 0, 0
	for i < len(p) {
		n, undecided := r.secretAt(p[i:], final)
		if undecided {
			break
		}
		if n == 0 {
			i++
			continue
		}
		r.out = append(r.out, p[start:i]...)
		r.out = append(r.out, "***"...)
		i += n
		start = i
	}
	r.out = append(r.out, p[start:i]...)
	r.pending = append(r.pending[:0], p[i:]...)
	if len(r.out) == 0 {
		return nil
	}
	_, err := r.w.Write(r.out)
	return err
}

// secretAt returns the length of the longest secret p starts with, or
// undecided when p is too short to tell yet.
func (r *redactWriter) secretAt(p []byte, final bool) (n int, undecided bool) {
	for _, s := range r.secrets {
		switch {
		case bytes.HasPrefix(p, s):
			return len(s), false
		case !final && len(p) < len(s) && bytes.HasPrefix(s, p):
			return 0, true
		}
	}
	return 0, false
}
