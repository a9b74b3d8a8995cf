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
)

// Answer is a response's status, head and body. Trailer is filled once
// Body has been read to its end.
type Answer struct {
	Status  int
	Header  map[string]string
	Trailer map[string]string
	Body    io.ReadCloser
}

// Do sends one request (without a body) on a connection from dial and
// reads the answer's head. Closing Body closes the connection; ctx ending
// closes it too.
func Do(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error),
	addr, method, target string, header map[string]string) (*Answer, error) {
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	fail := func(err error) (*Answer, error) {
		stop()
		c.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, target, ctx.Err())
		}
		return nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, addr)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	if method != "GET" {
		b.WriteString("Content-Length: 0\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		return fail(err)
	}
	lim := &limitedReader{r: c, n: MaxHeaderBytes}
	br := bufio.NewReaderSize(lim, 4<<10)
	a, err := readAnswerHead(br)
	if err != nil {
		return fail(err)
	}
	lim.n = 1<<63 - 1
	body := &answerBody{c: c, stop: stop, r: br}
	switch cl, hasCL := a.Header["content-length"]; {
	case strings.EqualFold(a.Header["transfer-encoding"], "chunked"):
		body.r = &chunked{br: br, lim: lim, trailer: a.Trailer}
	case hasCL:
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n < 0 {
			return fail(fmt.Errorf("bad Content-Length %q", clip(cl)))
		}
		body.r = io.LimitReader(br, n)
	case a.Header["transfer-encoding"] != "":
		return fail(fmt.Errorf("unsupported Transfer-Encoding %q", clip(a.Header["transfer-encoding"])))
	}
	a.Body = body
	return a, nil
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

type answerBody struct {
	c    net.Conn
	stop func() bool
	r    io.Reader
}

func (b *answerBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *answerBody) Close() error {
	b.stop()
	return b.c.Close()
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
