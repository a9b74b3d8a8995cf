package loophttp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// Server answers requests with its Handler, those of one connection one
// after another.
type Server struct {
	Handler     func(*Response, *Request)
	ReadTimeout time.Duration // for the request line, headers and body
	MaxBody     int64

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool // true: idle between requests
	closed bool
	wg     sync.WaitGroup
}

// errServerClosed is what Serve returns after Shutdown.
var errServerClosed = errors.New("server closed")

// Serve accepts connections on ln until Shutdown or a failing Accept.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errServerClosed
	}
	s.ln, s.conns = ln, map[net.Conn]bool{}
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.closed {
				return errServerClosed
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return errServerClosed
		}
		s.conns[c] = false
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// Shutdown stops accepting, lets answers under way finish for up to
// grace, then closes what is left.
func (s *Server) Shutdown(grace time.Duration) {
	s.mu.Lock()
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	for c, idle := range s.conns {
		if idle {
			c.Close()
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	<-done
}

func (s *Server) serveConn(c net.Conn) {
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	lim := &limitedReader{r: c}
	br := bufio.NewReaderSize(lim, 4<<10)
	for first := true; ; first = false {
		if !first && !s.setIdle(c, true) {
			return
		}
		_ = c.SetReadDeadline(time.Now().Add(s.ReadTimeout))
		lim.n = MaxHeaderBytes
		w := &Response{c: c, bw: bufio.NewWriter(c), header: map[string]string{}}
		req, err := ReadRequest(br, s.MaxBody)
		if !first && !s.setIdle(c, false) {
			return
		}
		if err == nil {
			// The body is read (no route needs it) so that the next
			// request, or closing, finds the connection clean.
			lim.n = req.ContentLength
			_, err = io.CopyN(io.Discard, br, req.ContentLength)
		}
		if err != nil {
			var r *refusal
			if errors.As(err, &r) {
				w.close = true
				w.Error(r.status, r.msg)
				w.flush()
				linger(c)
			}
			return
		}
		_ = c.SetReadDeadline(time.Time{})
		w.close = req.close
		s.Handler(w, req)
		w.finish()
		if w.close || w.err != nil {
			return
		}
	}
}

// setIdle marks c as waiting for its next request, which Shutdown need
// not wait for; false when the server is closing.
func (s *Server) setIdle(c net.Conn, idle bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c] = idle
	return !s.closed
}

// linger reads what the refused peer still sends, bounded in size and
// time, so that closing does not reset the connection under the answer
// (the peer closes once it has read it).
func linger(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(lingerWait))
	_, _ = io.CopyN(io.Discard, c, lingerBytes)
}

const (
	lingerWait  = time.Second
	lingerBytes = 1 << 20
)

// Response is the answer to one request.
type Response struct {
	c       net.Conn
	close   bool // the connection ends with this answer
	bw      *bufio.Writer
	header  map[string]string
	order   []string
	started bool
	chunked bool
	trailer [][2]string
	err     error
	gone    <-chan struct{}
}

// Gone is closed once the client of a stream has closed its side (never,
// before Stream).
func (w *Response) Gone() <-chan struct{} { return w.gone }

// SetHeader sets a field of the answer's head.
func (w *Response) SetHeader(name, value string) {
	if _, ok := w.header[name]; !ok {
		w.order = append(w.order, name)
	}
	w.header[name] = value
}

// JSON answers code with v as its JSON body.
func (w *Response) JSON(code int, v any) {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	w.Raw(code, "application/json", b.Bytes())
}

// Raw answers code with body b of type contentType.
func (w *Response) Raw(code int, contentType string, b []byte) {
	w.SetHeader("Content-Type", contentType)
	w.SetHeader("Content-Length", strconv.Itoa(len(b)))
	w.writeHead(code)
	w.write(b)
}

// Error answers code with {"error": msg}.
func (w *Response) Error(code int, msg string) {
	w.JSON(code, map[string]string{"error": msg})
}

// Stream starts a chunked answer with code, declaring the trailers it may
// end with; Write then sends each piece at once.
func (w *Response) Stream(code int, trailers string) {
	// A stream ends its connection: nothing more is expected from the
	// peer, so a read ending says it has gone.
	w.chunked, w.close = true, true
	done := make(chan struct{})
	w.gone = done
	go func() {
		var b [1]byte
		for {
			if _, err := w.c.Read(b[:]); err != nil {
				close(done)
				return
			}
		}
	}()
	w.SetHeader("Transfer-Encoding", "chunked")
	if trailers != "" {
		w.SetHeader("Trailer", trailers)
	}
	w.writeHead(code)
	w.flush()
}

// Write sends p as one chunk of a stream and flushes it.
func (w *Response) Write(p []byte) (int, error) {
	if !w.chunked {
		return 0, errors.New("loophttp: Write before Stream")
	}
	if len(p) == 0 {
		return 0, w.err
	}
	fmt.Fprintf(w.bw, "%x\r\n", len(p))
	w.write(p)
	w.write([]byte("\r\n"))
	w.flush()
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// SetTrailer sets a trailer of a stream, sent when it ends.
func (w *Response) SetTrailer(name, value string) {
	w.trailer = append(w.trailer, [2]string{name, value})
}

func (w *Response) writeHead(code int) {
	if w.started {
		return
	}
	w.started = true
	fmt.Fprintf(w.bw, "HTTP/1.1 %d %s\r\n", code, StatusText(code))
	for _, k := range w.order {
		fmt.Fprintf(w.bw, "%s: %s\r\n", k, w.header[k])
	}
	if w.close {
		w.write([]byte("Connection: close\r\n"))
	}
	w.write([]byte("\r\n"))
}

// finish ends a stream with its trailers and flushes what is left.
func (w *Response) finish() {
	if !w.started {
		w.Error(500, "no answer")
	}
	if w.chunked {
		w.write([]byte("0\r\n"))
		for _, t := range w.trailer {
			fmt.Fprintf(w.bw, "%s: %s\r\n", t[0], t[1])
		}
		w.write([]byte("\r\n"))
	}
	w.flush()
}

func (w *Response) write(p []byte) {
	if w.err == nil {
		_, w.err = w.bw.Write(p)
	}
}

func (w *Response) flush() {
	if w.err == nil {
		w.err = w.bw.Flush()
	}
}

// StatusText is the reason phrase of a status the controller answers with.
func StatusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 401:
		return "Unauthorized"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 409:
		return "Conflict"
	case 413:
		return "Request Entity Too Large"
	case 416:
		return "Requested Range Not Satisfiable"
	case 431:
		return "Request Header Fields Too Large"
	case 500:
		return "Internal Server Error"
	case 501:
		return "Not Implemented"
	case 503:
		return "Service Unavailable"
	case 505:
		return "HTTP Version Not Supported"
	}
	return "Status " + strconv.Itoa(code)
}

// The statuses the controller answers with.
const (
	StatusOK                    = 200
	StatusBadRequest            = 400
	StatusUnauthorized          = 401
	StatusNotFound              = 404
	StatusMethodNotAllowed      = 405
	StatusConflict              = 409
	StatusRequestEntityTooLarge = 413
	StatusRangeNotSatisfiable   = 416
	StatusHeaderFieldsTooLarge  = 431
	StatusInternalServerError   = 500
	StatusNotImplemented        = 501
	StatusServiceUnavailable    = 503
)
