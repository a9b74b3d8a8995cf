// Package loophttp is the HTTP/1.1 the controller's loopback API needs and
// no more: bodies by Content-Length only, answers by Content-Length (the
// connection kept for the next request) or as a chunked stream (the
// connection closed after it). It keeps the helper
// free of net/http (docs/architecture.md) while any HTTP/1.1 client,
// net/http's included, talks to it as to any server.
package loophttp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// Bounds of what a peer may send before it is refused.
const (
	MaxHeaderBytes = 8 << 10 // request or status line and headers together
	MaxHeaders     = 64      // header lines
)

// Request is a parsed request line and its headers.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	// RawQuery is the query as sent, without its '?': what a signature
	// over the request names, since parsing loses its exact bytes.
	RawQuery string
	// Header holds each field by its lower-cased name; a repeated field
	// keeps its values joined by ", ".
	Header        map[string]string
	ContentLength int64
	close         bool // the client will send no other request on the connection
}

// refusal is a request the server answers with status and closes.
type refusal struct {
	status int
	msg    string
}

func (e *refusal) Error() string { return e.msg }

// StatusOf is the status a parse error is answered with: 400 unless the
// error says otherwise.
func StatusOf(err error) int {
	var r *refusal
	if errors.As(err, &r) {
		return r.status
	}
	return 400
}

// ReadRequest reads a request's line and headers from br, which must not
// yield more than MaxHeaderBytes before the blank line (the caller bounds
// it, see limitedReader). A body, chunked or larger than maxBody, is
// refused; the body itself is left unread.
func ReadRequest(br *bufio.Reader, maxBody int64) (*Request, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, err
	}
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || method == "" || !isToken(method) {
		return nil, &refusal{400, fmt.Sprintf("malformed request line %q", clip(line))}
	}
	if proto != "HTTP/1.1" && proto != "HTTP/1.0" {
		return nil, &refusal{505, fmt.Sprintf("unsupported protocol %q", clip(proto))}
	}
	if !strings.HasPrefix(target, "/") {
		return nil, &refusal{400, fmt.Sprintf("request target %q is not a path", clip(target))}
	}
	path, raw, _ := strings.Cut(target, "?")
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, &refusal{400, "malformed query: " + err.Error()}
	}
	h, err := readHeader(br)
	if err != nil {
		return nil, err
	}
	r := &Request{Method: method, Path: path, Query: q, RawQuery: raw, Header: h,
		close: proto == "HTTP/1.0" || strings.Contains(strings.ToLower(h["connection"]), "close")}
	if _, ok := h["transfer-encoding"]; ok {
		return nil, &refusal{501, "a request body must be sent with Content-Length, not Transfer-Encoding"}
	}
	if cl, ok := h["content-length"]; ok {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n < 0 || cl[0] == '+' {
			return nil, &refusal{400, fmt.Sprintf("bad Content-Length %q", clip(cl))}
		}
		r.ContentLength = n
	}
	if r.ContentLength > maxBody {
		return r, &refusal{413, fmt.Sprintf("request body larger than %d bytes", maxBody)}
	}
	return r, nil
}

// readHeader reads header fields up to the blank line.
func readHeader(br *bufio.Reader) (map[string]string, error) {
	h := map[string]string{}
	for n := 0; ; n++ {
		line, err := readLine(br)
		if err != nil {
			return nil, err
		}
		if line == "" {
			return h, nil
		}
		if n == MaxHeaders {
			return nil, &refusal{431, fmt.Sprintf("more than %d header fields", MaxHeaders)}
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || !isToken(name) {
			// A line starting with white space (an obsolete folded
			// continuation) fails here too.
			return nil, &refusal{400, fmt.Sprintf("malformed header line %q", clip(line))}
		}
		name, value = strings.ToLower(name), strings.Trim(value, " \t")
		if old, ok := h[name]; ok {
			if name == "content-length" && old != value {
				return nil, &refusal{400, "conflicting Content-Length fields"}
			}
			if name != "content-length" {
				value = old + ", " + value
			}
		}
		h[name] = value
	}
}

// readLine reads one CRLF- (or LF-) terminated line without its end. A
// reader cut off by its bound is a header too large.
func readLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		if errors.Is(err, errLimit) {
			return "", &refusal{431, fmt.Sprintf("request line and headers larger than %d bytes", MaxHeaderBytes)}
		}
		if errors.Is(err, io.EOF) && line != "" {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	for i := 0; i < len(line); i++ {
		if c := line[i]; c < ' ' && c != '\t' || c == 0x7f {
			return "", &refusal{400, "control character in request line or header"}
		}
	}
	return line, nil
}

// isToken reports whether s is an HTTP token (a method or field name).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}

// clip keeps an echoed piece of input short.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// errLimit: a limitedReader ran out.
var errLimit = errors.New("read limit reached")

// limitedReader reads at most n bytes, then fails with errLimit (where
// io.LimitedReader says EOF, which a peer closing would say too).
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errLimit
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
