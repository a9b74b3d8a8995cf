// Package taskdir is the remote half of kandev-exec: it runs on the host,
// inside `kandev-exec helper`, and answers one JSON request per process so
// that each remote step costs one round trip. Of this module it imports
// only the shared primitives (internal/fsx, internal/redact): the host has
// no store, no profiles and no SSH.
package taskdir

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// Operations served by Serve.
const (
	OpPrepare   = "prepare"
	OpRunScript = "run-script"
	OpStat      = "stat"
)

// Error codes carried in a failed response.
const (
	CodeBadRequest     = "bad_request"
	CodeUnsafePath     = "unsafe_path"
	CodeOwnerMismatch  = "owner_mismatch"
	CodeOriginMismatch = "origin_mismatch"
	CodeGitFailed      = "git_failed"
	CodeVerifyFailed   = "verify_failed"
	CodeTimeout        = "timeout"
	CodeIO             = "io_error"
	CodeUnsafeCheckout = "unsafe_checkout" // detached commits or an unfinished rebase/merge a checkout could lose
	CodeBusy           = "busy"            // another prepare or run-script holds the task dir's lock
)

// maxRequest bounds stdin: a request is a few KiB even with a large env.
const maxRequest = 16 << 20

// Error is a failed operation as the caller sees it.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Serve reads one request `{"op": ..., ...}` from r and writes one
// response to w: the op's result with "ok": true, or "ok": false and an
// error. It returns an error only when the request cannot be read or the
// response cannot be written; a failed op is a normal response.
func Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	b, err := io.ReadAll(io.LimitReader(r, maxRequest+1))
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	if len(b) > maxRequest {
		return fmt.Errorf("read request: larger than %d bytes", maxRequest)
	}
	var head struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("decode request: %w", err)
	}
	res, err := dispatch(ctx, head.Op, b)
	out, err := encodeResponse(res, err)
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

func dispatch(ctx context.Context, op string, b []byte) (any, error) {
	switch op {
	case OpPrepare:
		var req PrepareRequest
		if err := json.Unmarshal(b, &req); err != nil {
			return nil, errorf(CodeBadRequest, "decode prepare request: %v", err)
		}
		return Prepare(ctx, req)
	case OpRunScript:
		var req RunScriptRequest
		if err := json.Unmarshal(b, &req); err != nil {
			return nil, errorf(CodeBadRequest, "decode run-script request: %v", err)
		}
		return RunScript(ctx, req)
	case OpStat:
		var req StatRequest
		if err := json.Unmarshal(b, &req); err != nil {
			return nil, errorf(CodeBadRequest, "decode stat request: %v", err)
		}
		return Stat(req)
	}
	return nil, errorf(CodeBadRequest, "unknown op %q", op)
}

// encodeResponse flattens res into the response object next to "ok".
func encodeResponse(res any, opErr error) ([]byte, error) {
	if opErr != nil {
		e, ok := opErr.(*Error)
		if !ok {
			e = &Error{Code: CodeIO, Message: opErr.Error()}
		}
		return json.Marshal(struct {
			OK    bool   `json:"ok"`
			Error *Error `json:"error"`
		}{false, e})
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	fields["ok"] = json.RawMessage("true")
	return json.Marshal(fields)
}

// EncodeRequest renders req (a *Request struct of this package) as the
// request for op, for the caller's side of the pipe.
func EncodeRequest(op string, req any) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	fields["op"], _ = json.Marshal(op)
	return json.Marshal(fields)
}

// DecodeResponse reads a response into res; a failed op comes back as
// *Error.
func DecodeResponse(b []byte, res any) error {
	var head struct {
		OK    bool   `json:"ok"`
		Error *Error `json:"error"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("decode helper response: %w", err)
	}
	if !head.OK {
		if head.Error == nil {
			return fmt.Errorf("helper response has neither ok nor error: %.200q", b)
		}
		return head.Error
	}
	return json.Unmarshal(b, res)
}
