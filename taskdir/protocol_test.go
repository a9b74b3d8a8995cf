package taskdir

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func serve(t *testing.T, op string, req any) []byte {
	t.Helper()
	in, err := EncodeRequest(op, req)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Serve(context.Background(), bytes.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestServeStat(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]StatResult{
		dir:                         {Exists: true, IsDir: true},
		link:                        {Exists: true, IsSymlink: true},
		filepath.Join(dir, "nope"):  {},
		filepath.Join(link, "nope"): {},
	} {
		out := serve(t, OpStat, StatRequest{Path: path})
		if !bytes.Contains(out, []byte(`"ok":true`)) {
			t.Fatalf("response %s", out)
		}
		var got StatResult
		if err := DecodeResponse(out, &got); err != nil || got != want {
			t.Fatalf("stat %s = %+v, %v; want %+v", path, got, err, want)
		}
	}
}

func TestServeFailures(t *testing.T) {
	var res StatResult
	err := DecodeResponse(serve(t, "format-disk", StatRequest{}), &res)
	wantCode(t, err, CodeBadRequest)
	err = DecodeResponse(serve(t, OpStat, StatRequest{Path: "relative"}), &res)
	wantCode(t, err, CodeBadRequest)
	err = DecodeResponse(serve(t, OpPrepare, map[string]any{"task_dir": 7}), &res)
	wantCode(t, err, CodeBadRequest)

	// Only an unreadable request fails the process itself.
	var out bytes.Buffer
	if err := Serve(context.Background(), strings.NewReader("not json"), &out); err == nil || out.Len() != 0 {
		t.Fatalf("garbage request: %v, wrote %q", err, out.String())
	}
}
