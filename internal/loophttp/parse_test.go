package loophttp

import (
	"bufio"
	"strings"
	"testing"
)

func parse(raw string, maxBody int64) (*Request, error) {
	br := bufio.NewReader(&limitedReader{r: strings.NewReader(raw), n: MaxHeaderBytes})
	return ReadRequest(br, maxBody)
}

func TestReadRequestParses(t *testing.T) {
	r, err := parse("GET /v1/logs?offset=12&follow=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nX-A: 1\r\nx-a: 2\r\n\r\n", 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != "GET" || r.Path != "/v1/logs" || r.Query.Get("offset") != "12" || r.Query.Get("follow") != "1" || r.RawQuery != "offset=12&follow=1" {
		t.Fatalf("parsed %+v", r)
	}
	if r.Header["authorization"] != "Bearer t" || r.Header["x-a"] != "1, 2" {
		t.Fatalf("headers %q", r.Header)
	}
	if r, err := parse("POST /v1/stop HTTP/1.0\nContent-Length: 3\n\nabc", 4); err != nil || r.ContentLength != 3 {
		t.Fatalf("LF-only request with a body: %+v, %v", r, err)
	}
}

func TestReadRequestRefusesHostileInput(t *testing.T) {
	many := ""
	for i := 0; i <= MaxHeaders; i++ {
		many += "X-H: v\r\n"
	}
	for name, tc := range map[string]struct {
		raw    string
		status int
	}{
		"oversized headers":        {"GET / HTTP/1.1\r\nX-Pad: " + strings.Repeat("a", MaxHeaderBytes) + "\r\n\r\n", 431},
		"oversized request line":   {"GET /" + strings.Repeat("a", MaxHeaderBytes) + " HTTP/1.1\r\n\r\n", 431},
		"too many header fields":   {"GET / HTTP/1.1\r\n" + many + "\r\n", 431},
		"bad method":               {"G(T / HTTP/1.1\r\n\r\n", 400},
		"no method":                {" / HTTP/1.1\r\n\r\n", 400},
		"no protocol":              {"GET /\r\n\r\n", 400},
		"other protocol":           {"GET / HTTP/2.0\r\n\r\n", 505},
		"absolute target":          {"GET http://x/ HTTP/1.1\r\n\r\n", 400},
		"bad query":                {"GET /?a=%zz HTTP/1.1\r\n\r\n", 400},
		"header without colon":     {"GET / HTTP/1.1\r\nBroken\r\n\r\n", 400},
		"folded header":            {"GET / HTTP/1.1\r\nX-A: 1\r\n  more\r\n\r\n", 400},
		"space before colon":       {"GET / HTTP/1.1\r\nX-A : 1\r\n\r\n", 400},
		"control character":        {"GET / HTTP/1.1\r\nX-A: a\x00b\r\n\r\n", 400},
		"chunked body":             {"POST /v1/stop HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", 501},
		"negative Content-Length":  {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
		"signed Content-Length":    {"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 400},
		"conflicting lengths":      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
		"body over the bound":      {"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde", 413},
		"Content-Length overflows": {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(tc.raw, 4)
			if err == nil {
				t.Fatalf("%q parsed", tc.raw)
			}
			if got := StatusOf(err); got != tc.status {
				t.Fatalf("%q: status %d (%v), want %d", tc.raw, got, err, tc.status)
			}
		})
	}
}

// A request cut short is an error, never a request.
func TestReadRequestCutShort(t *testing.T) {
	full := "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"
	for i := 0; i < len(full)-1; i++ {
		if r, err := parse(full[:i], 0); err == nil {
			t.Fatalf("%q parsed as %+v", full[:i], r)
		}
	}
}

func FuzzReadRequest(f *testing.F) {
	f.Add("GET /v1/health?nonce=abc HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	f.Add("POST /v1/drain?claim_id=c&grace=1s HTTP/1.1\r\nAuthorization: Bearer t\r\nContent-Length: 0\r\n\r\n")
	f.Add("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		lim := &limitedReader{r: strings.NewReader(raw), n: MaxHeaderBytes}
		r, err := ReadRequest(bufio.NewReader(lim), 16)
		if err != nil {
			if s := StatusOf(err); s < 400 || s > 599 {
				t.Fatalf("status %d for %v", s, err)
			}
			return
		}
		if !strings.HasPrefix(r.Path, "/") || !isToken(r.Method) || r.ContentLength < 0 || r.ContentLength > 16 {
			t.Fatalf("accepted %+v", r)
		}
		if _, ok := r.Header["transfer-encoding"]; ok {
			t.Fatalf("accepted a Transfer-Encoding: %+v", r)
		}
		if len(r.Header) > MaxHeaders {
			t.Fatalf("%d header fields accepted", len(r.Header))
		}
	})
}
