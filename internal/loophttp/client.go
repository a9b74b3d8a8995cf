package loophttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// Answer is a response's status, head and body. Trailer is filled once
// Body has been read to its end.
type Answer struct {
	Status  int
	Header  map[string]string
	Trailer map[string]string
	Body    io.ReadCloser
}

// Pool sends requests to one address, keeping the last connection whose
// answer allows it for the next request: over SSH, a channel opened once.
type Pool struct {
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	Addr string

	mu   sync.Mutex
	idle *pconn
}

// pconn is a connection with what is buffered from it.
type pconn struct {
	c   net.Conn
	lim *limitedReader
	br  *bufio.Reader
}

// Do sends one request (without a body) and reads the answer's head.
// Body must be closed; ctx ending closes the connection. A kept
// connection the server has closed meanwhile is replaced by a fresh one,
// unless the request carries Authorization.
func (p *Pool) Do(ctx context.Context, method, target string, header map[string]string) (*Answer, error) {
	p.mu.Lock()
	pc := p.idle
	p.idle = nil
	p.mu.Unlock()
	if pc != nil {
		a, answered, err := p.roundTrip(ctx, pc, method, target, header)
		// A request carrying the token is never resent on a fresh
		// connection: whatever holds the port now may not be the
		// server, and the caller proves it first.
		if err == nil || answered || ctx.Err() != nil || header["Authorization"] != "" {
			return a, err
		}
	}
	c, err := p.Dial(ctx, "tcp", p.Addr)
	if err != nil {
		return nil, err
	}
	lim := &limitedReader{r: c}
	a, _, err := p.roundTrip(ctx, &pconn{c: c, lim: lim, br: bufio.NewReaderSize(lim, 4<<10)}, method, target, header)
	return a, err
}

// CloseIdle closes the connection kept for the next request, if any.
func (p *Pool) CloseIdle() {
	p.mu.Lock()
	pc := p.idle
	p.idle = nil
	p.mu.Unlock()
	if pc != nil {
		pc.c.Close()
	}
}

// roundTrip sends a request on pc and reads the answer's head; answered
// says whether any of an answer came.
func (p *Pool) roundTrip(ctx context.Context, pc *pconn, method, target string, header map[string]string) (_ *Answer, answered bool, _ error) {
	c, br := pc.c, pc.br
	stop := context.AfterFunc(ctx, func() { c.Close() })
	fail := func(err error) (*Answer, bool, error) {
		stop()
		c.Close()
		answered := pc.lim.n != MaxHeaderBytes || br.Buffered() > 0
		if ctx.Err() != nil {
			return nil, answered, fmt.Errorf("%s %s: %w", method, target, ctx.Err())
		}
		return nil, answered, fmt.Errorf("%s %s: %w", method, target, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, p.Addr)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	if method != "GET" {
		b.WriteString("Content-Length: 0\r\n")
	}
	b.WriteString("\r\n")
	pc.lim.n = MaxHeaderBytes
	if _, err := io.WriteString(c, b.String()); err != nil {
		return fail(err)
	}
	a, err := readAnswerHead(br)
	if err != nil {
		return fail(err)
	}
	pc.lim.n = 1<<63 - 1
	body := &answerBody{pc: pc, pool: p, stop: stop, r: br,
		keep: !strings.Contains(strings.ToLower(a.Header["connection"]), "close")}
	switch cl, hasCL := a.Header["content-length"]; {
	case strings.EqualFold(a.Header["transfer-encoding"], "chunked"):
		body.r = &chunked{br: br, lim: pc.lim, trailer: a.Trailer}
	case hasCL:
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n < 0 {
			return fail(fmt.Errorf("bad Content-Length %q", clip(cl)))
		}
		body.r = io.LimitReader(br, n)
	case a.Header["transfer-encoding"] != "":
		return fail(fmt.Errorf("unsupported Transfer-Encoding %q", clip(a.Header["transfer-encoding"])))
	default:
		body.keep = false // the body ends with the connection
	}
	a.Body = body
	return a, true, nil
}

func readAnswerHead(br *bufio.Reader) (*Answer, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, err
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || err != nil || len(code) != 3 || n < 100 {
		return nil, fmt.Errorf("malformed status line %q", clip(line))
	}
	h, err := readHeader(br)
	if err != nil {
		return nil, err
	}
	return &Answer{Status: n, Header: h, Trailer: map[string]string{}}, nil
}

// answerBody is an answer's body; read to its end, its connection goes
// back to the pool on Close when the server keeps it.
type answerBody struct {
	pc   *pconn
	pool *Pool
	stop func() bool
	r    io.Reader
	keep bool
	end  bool
}

func (b *answerBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		b.end = true
	}
	return n, err
}

func (b *answerBody) Close() error {
	if b.keep && !b.end {
		// What a decoder left unread of a short body.
		_, _ = io.CopyN(io.Discard, b, 4<<10)
	}
	if b.stop() && b.keep && b.end && b.pc.br.Buffered() == 0 {
		b.pool.mu.Lock()
		old := b.pool.idle
		b.pool.idle = b.pc
		b.pool.mu.Unlock()
		if old != nil {
			old.c.Close()
		}
		return nil
	}
	return b.pc.c.Close()
}

// maxChunkLine bounds a chunk's size line; trailers share MaxHeaderBytes.
const maxChunkLine = 256

// chunked decodes a chunked body and its trailers.
type chunked struct {
	br      *bufio.Reader
	lim     *limitedReader // under br: bounded again for the trailers
	left    int64          // of the current chunk
	done    bool
	trailer map[string]string
}

func (r *chunked) Read(p []byte) (int, error) {
	if r.done {
		return 0, io.EOF
	}
	if r.left == 0 {
		line, err := r.br.ReadSlice('\n')
		if err != nil {
			return 0, noEOF(err)
		}
		if len(line) > maxChunkLine {
			return 0, errors.New("chunk size line too long")
		}
		size, _, _ := strings.Cut(strings.TrimRight(string(line), "\r\n"), ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad chunk size %q", clip(size))
		}
		if n == 0 {
			r.lim.n = MaxHeaderBytes
			h, err := readHeader(r.br)
			if err != nil {
				return 0, noEOF(err)
			}
			for k, v := range h {
				r.trailer[k] = v
			}
			r.done = true
			return 0, io.EOF
		}
		r.left = n
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.br.Read(p)
	r.left -= int64(n)
	if err != nil {
		return n, noEOF(err)
	}
	if r.left == 0 {
		var crlf [2]byte
		if _, err := io.ReadFull(r.br, crlf[:]); err != nil || crlf != [2]byte{'\r', '\n'} {
			return n, errors.New("chunk not followed by CRLF")
		}
	}
	return n, nil
}

// noEOF: a stream cut short is not a stream ended.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
