package controller

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// A route asked with the wrong method, or a path that is none, is refused
// with its status; without the token, only 401 is said.
func TestAPIRefusesWrongRoutes(t *testing.T) {
	t.Parallel()
	s := start(t, newRequest(t, "sleep 30"))
	ctx := ctxFor(t, 10*time.Second)
	base := fmt.Sprintf("http://127.0.0.1:%d", s.resp.Port)
	for _, tc := range []struct {
		method, path string
		auth         bool
		want         int
	}{
		{"POST", "/v1/status", true, http.StatusMethodNotAllowed},
		{"GET", "/v1/stop", true, http.StatusMethodNotAllowed},
		{"DELETE", "/v1/drain", true, http.StatusMethodNotAllowed},
		{"GET", "/v1/nothing", true, http.StatusNotFound},
		{"GET", "/v1/nothing", false, http.StatusUnauthorized},
		{"POST", "/v1/health", false, http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequestWithContext(ctx, tc.method, base+tc.path, nil)
		if tc.auth {
			req.Header.Set("Authorization", "Bearer "+s.req.Token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s (token %v): HTTP %d, want %d", tc.method, tc.path, tc.auth, resp.StatusCode, tc.want)
		}
	}
	if st, err := s.c.Status(ctx); err != nil || st.State != StateRunning {
		t.Fatalf("after the refused requests: %+v, %v; want the agent still running", st, err)
	}
}
