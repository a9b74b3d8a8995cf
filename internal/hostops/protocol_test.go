package hostops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/taskdir"
)

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
	in, err := EncodeRequest(op, req)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestServeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	out := serve(t, request(t, OpStat, taskdir.StatRequest{Path: dir}))
	var res taskdir.StatResult
	if err := ReadAnswer(bytes.NewReader(out), &res, nil); err != nil || !res.Exists || !res.IsDir {
		t.Fatalf("stat %s: %+v, %v (%s)", dir, res, err, out)
	}
	var v VersionInfo
	if err := ReadAnswer(bytes.NewReader(serve(t, request(t, OpVersion, nil))), &v, nil); err != nil || v.Protocol != Protocol() {
		t.Fatalf("version: %+v, %v", v, err)
	}
}

// A request of another protocol version is refused, saying which one the
// helper speaks, before anything is done.
func TestServeRefusesOtherProtocol(t *testing.T) {
	target := filepath.Join(t.TempDir(), "root")
	var fields map[string]any
	if err := json.Unmarshal(request(t, OpPrepare, taskdir.PrepareRequest{Root: target, TaskDir: "t1"}), &fields); err != nil {
		t.Fatal(err)
	}
	fields["v"] = Protocol() + 1
	in, _ := json.Marshal(fields)
	err := ReadAnswer(bytes.NewReader(serve(t, in)), nil, nil)
	var he *Error
	if !errors.As(err, &he) || he.Code != CodeProtocol || he.Protocol != Protocol() {
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
		"bad field":  []byte(`{"v":` + protocol + `,"op":"stat","path":7}`),
	} {
		err := ReadAnswer(bytes.NewReader(serve(t, in)), nil, nil)
		var he *Error
		if !errors.As(err, &he) || he.Code != CodeBadRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Progress lines reach the callback in order before the answer; an
// answer with neither ok nor error, or none at all, is an error.
func TestReadAnswerProgress(t *testing.T) {
	stream := `{"progress":{"step":"Preparing"}}` + "\n" + `{"progress":{"step":"Uploading","bytes":42}}` + "\n" + `{"ok":true,"exists":true}` + "\n"
	var got []Progress
	var res taskdir.StatResult
	if err := ReadAnswer(strings.NewReader(stream), &res, func(p Progress) { got = append(got, p) }); err != nil || !res.Exists {
		t.Fatalf("%+v, %v", res, err)
	}
	if len(got) != 2 || got[0].Step != "Preparing" || got[1].Bytes != 42 {
		t.Fatalf("progress = %+v", got)
	}
	for name, s := range map[string]string{"empty": "", "progress only": `{"progress":{"step":"x"}}` + "\n", "no verdict": `{"exists":true}` + "\n"} {
		if err := ReadAnswer(strings.NewReader(s), &res, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMainArguments(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"version"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), `"protocol":`+protocol) {
		t.Fatalf("version: %d %q %q", code, out.String(), errb.String())
	}
	for _, args := range [][]string{nil, {"frobnicate"}, {"controller", "run"}, {"serve", "extra"}} {
		errb.Reset()
		if code := Main(context.Background(), args, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage") {
			t.Errorf("%q: exit %d, %q", args, code, errb.String())
		}
	}
}
