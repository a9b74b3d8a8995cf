package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A request carries the protocol version and its operation beside the
// operation's own fields; an answer carries ok beside the result, or the
// failure.
func TestRequestAndAnswerEnvelopes(t *testing.T) {
	in, err := EncodeRequest(OpSessionFiles, SessionRequest{SessionDir: "/d", StartTime: 7})
	if err != nil {
		t.Fatal(err)
	}
	v, op, err := RequestHead(in)
	if err != nil || v != Protocol() || op != OpSessionFiles || !strings.Contains(string(in), `"session_dir":"/d"`) {
		t.Fatalf("request %s: v %d, op %q, %v", in, v, op, err)
	}
	if _, err := EncodeRequest(OpVersion, "not an object"); err == nil {
		t.Fatal("a request that is not a JSON object was encoded")
	}
	ok, err := EncodeAnswer(SessionFiles{PID: 42}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var res SessionFiles
	if err := ReadAnswer(bytes.NewReader(ok), &res, nil); err != nil || res.PID != 42 {
		t.Fatalf("answer %s: %+v, %v", ok, res, err)
	}
	failed, err := EncodeAnswer(nil, &Error{Code: CodeIO, Message: "disk full"})
	if err != nil {
		t.Fatal(err)
	}
	var he *Error
	if err := ReadAnswer(bytes.NewReader(failed), &res, nil); !errors.As(err, &he) || he.Code != CodeIO || he.Message != "disk full" {
		t.Fatalf("failure %s: %v", failed, err)
	}
}

// Progress lines reach the callback in order before the answer; an
// answer with neither ok nor error, or none at all, is an error.
func TestReadAnswerProgress(t *testing.T) {
	stream := string(EncodeProgress(Progress{Step: "Preparing"})) + "\n" + `{"progress":{"step":"Uploading","bytes":42}}` + "\n" + `{"ok":true,"pid":42}` + "\n"
	var got []Progress
	var res SessionFiles
	if err := ReadAnswer(strings.NewReader(stream), &res, func(p Progress) { got = append(got, p) }); err != nil || res.PID != 42 {
		t.Fatalf("%+v, %v", res, err)
	}
	if len(got) != 2 || got[0].Step != "Preparing" || got[1].Bytes != 42 {
		t.Fatalf("progress = %+v", got)
	}
	for name, s := range map[string]string{"empty": "", "progress only": `{"progress":{"step":"x"}}` + "\n", "no verdict": `{"pid":42}` + "\n"} {
		if err := ReadAnswer(strings.NewReader(s), &res, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// An answer past the bound is refused unread.
func TestReadAnswerOversized(t *testing.T) {
	big := bytes.Repeat([]byte{' '}, MaxRequest+1)
	if err := ReadAnswer(bytes.NewReader(big), nil, nil); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized answer: %v", err)
	}
}

// Progress lines are passed on, not kept: more of them than the bound on
// an answer (a script that prints a lot) still ends with the answer.
func TestReadAnswerAfterMuchProgress(t *testing.T) {
	line := append(EncodeProgress(Progress{Step: StepOutput, Line: strings.Repeat("x", 64<<10)}), '\n')
	stream := append(bytes.Repeat(line, MaxRequest/len(line)+2), `{"ok":true,"pid":7}`+"\n"...)
	n := 0
	var res SessionFiles
	if err := ReadAnswer(bytes.NewReader(stream), &res, func(Progress) { n++ }); err != nil || res.PID != 7 || n != MaxRequest/len(line)+2 {
		t.Fatalf("%+v, %d progress lines, %v", res, n, err)
	}
}
