package helper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
	"github.com/kdlbs/kandev-exec/taskdir"
)

// TestMain lets the test binary be the helper: controller-start re-execs
// it as `controller run`, and a test runs a copy of it as `serve`.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "controller" || len(os.Args) == 2 && os.Args[1] == "serve" {
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0") // race-enabled controllers would sleep at exit
	}
	os.Exit(m.Run())
}

func serve(t *testing.T, in []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := Serve(context.Background(), bytes.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func request(t *testing.T, op string, req any) []byte {
	t.Helper()
	in, err := protocol.EncodeRequest(op, req)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestServeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	out := serve(t, request(t, protocol.OpSessionFiles, protocol.SessionRequest{SessionDir: dir}))
	var res protocol.SessionFiles
	if err := protocol.ReadAnswer(bytes.NewReader(out), &res, nil); err != nil || res.PID != 0 || res.Status != nil {
		t.Fatalf("session-files %s: %+v, %v (%s)", dir, res, err, out)
	}
	var v protocol.VersionInfo
	if err := protocol.ReadAnswer(bytes.NewReader(serve(t, request(t, protocol.OpVersion, nil))), &v, nil); err != nil || v.Protocol != protocol.Protocol() {
		t.Fatalf("version: %+v, %v", v, err)
	}
}

// A request of another protocol version is refused, saying which one the
// helper speaks, before anything is done.
func TestServeRefusesOtherProtocol(t *testing.T) {
	target := filepath.Join(t.TempDir(), "root")
	var fields map[string]any
	if err := json.Unmarshal(request(t, protocol.OpPrepare, taskdir.PrepareRequest{Root: target, TaskDir: "t1"}), &fields); err != nil {
		t.Fatal(err)
	}
	fields["v"] = protocol.Protocol() + 1
	in, _ := json.Marshal(fields)
	err := protocol.ReadAnswer(bytes.NewReader(serve(t, in)), nil, nil)
	var he *protocol.Error
	if !errors.As(err, &he) || he.Code != protocol.CodeProtocol || he.Protocol != protocol.Protocol() {
		t.Fatalf("other protocol: %v", err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused request did something: %v", err)
	}
}

func TestServeUnknownOpAndBadJSON(t *testing.T) {
	for name, in := range map[string][]byte{
		"unknown op": request(t, "frobnicate", nil),
		"not json":   []byte("{"),
		"bad field":  []byte(`{"v":` + strconv.Itoa(protocol.Protocol()) + `,"op":"session-files","session_dir":7}`),
	} {
		err := protocol.ReadAnswer(bytes.NewReader(serve(t, in)), nil, nil)
		var he *protocol.Error
		if !errors.As(err, &he) || he.Code != protocol.CodeBadRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMainArguments(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"version"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), `"protocol":`+strconv.Itoa(protocol.Protocol())) {
		t.Fatalf("version: %d %q %q", code, out.String(), errb.String())
	}
	for _, args := range [][]string{nil, {"frobnicate"}, {"controller", "run"}, {"serve", "extra"}} {
		errb.Reset()
		if code := Main(context.Background(), args, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage") {
			t.Errorf("%q: exit %d, %q", args, code, errb.String())
		}
	}
}

// converse serves a pipe: send writes a request, inW ends the input,
// answers reads what comes back, served is how Serve ended.
func converse(t *testing.T) (send func(op string, req any), inW io.WriteCloser, answers *protocol.Answers, served chan error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served = make(chan error, 1)
	go func() {
		served <- Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	send = func(op string, req any) {
		t.Helper()
		if _, err := inW.Write(append(request(t, op, req), '\n')); err != nil {
			t.Fatal(err)
		}
	}
	return send, inW, protocol.NewAnswers(outR), served
}

// One helper process serves several requests, each answered in order
// before the next is read: a launch's steps over one SSH command.
func TestServeConversation(t *testing.T) {
	dir := t.TempDir()
	send, inW, answers, served := converse(t)
	// The second request leaves only once the first is answered, as the
	// CLI does: the helper must not wait for the end of its input.
	send(protocol.OpSessionFiles, protocol.SessionRequest{SessionDir: dir})
	var sf protocol.SessionFiles
	if err := answers.Next(&sf, nil); err != nil || sf.PID != 0 {
		t.Fatalf("session-files: %+v, %v", sf, err)
	}
	send("frobnicate", nil)
	var he *protocol.Error
	if err := answers.Next(nil, nil); !errors.As(err, &he) || he.Code != protocol.CodeBadRequest {
		t.Fatalf("unknown op: %v", err)
	}
	send(protocol.OpVersion, nil)
	inW.Close()
	var v protocol.VersionInfo
	if err := answers.Next(&v, nil); err != nil || v.Protocol != protocol.Protocol() {
		t.Fatalf("version: %+v, %v", v, err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if err := answers.Next(nil, nil); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("past the last answer: %v", err)
	}
}

// Empty input is still answered (bad request); a request past the bound
// is refused unread.
func TestServeEmptyAndOversized(t *testing.T) {
	var he *protocol.Error
	if err := protocol.ReadAnswer(bytes.NewReader(serve(t, nil)), nil, nil); !errors.As(err, &he) || he.Code != protocol.CodeBadRequest {
		t.Fatalf("empty input: %v", err)
	}
	big := bytes.Repeat([]byte{' '}, protocol.MaxRequest+1)
	if err := Serve(context.Background(), bytes.NewReader(big), io.Discard); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized request: %v", err)
	}
}

// controller-start with a nonce answers with the started controller's
// proof for it, which verifies with the token the caller made.
func TestControllerStartProof(t *testing.T) {
	task := filepath.Join(t.TempDir(), "tasks", "task-1")
	if err := os.MkdirAll(task, 0o700); err != nil {
		t.Fatal(err)
	}
	token, nonce := controller.NewNonce(), controller.NewNonce()
	req := protocol.ControllerStart{Nonce: nonce, StartRequest: controller.StartRequest{SessionID: "sess-1", TaskID: "task-1", TaskDir: task,
		SessionDir: filepath.Join(task, ".kandev", "sessions", "sess-1"), Shell: "sh", Command: "sleep 30", Token: token, Linger: "1s"}}
	var steps []string
	var got protocol.Started
	err := protocol.ReadAnswer(bytes.NewReader(serve(t, request(t, protocol.OpControllerStart, req))), &got, func(p protocol.Progress) { steps = append(steps, p.Step) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { controller.KillIfOurs(req.SessionDir, got.StartTime) })
	if got.Health == nil || got.Unproven != "" || !controller.VerifyHealth(token, nonce, *got.Health) ||
		got.Health.PID != got.PID || got.Health.StartTime != got.StartTime || got.Health.SessionID != "sess-1" {
		t.Fatalf("started: %+v (health %+v)", got, got.Health)
	}
	if len(steps) != 1 || steps[0] != protocol.StepProof {
		t.Fatalf("progress = %q", steps)
	}
}
