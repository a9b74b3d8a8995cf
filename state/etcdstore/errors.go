package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kdlbs/kandev-exec/state"
)

// fail turns what the client returned for op into the store's errors: the
// caller's own cancellation as it is; no answer in time, or no leader, as
// *state.UnreachableError; refused credentials as *state.AuthError; the
// rest named with the store and op.
func (s *Store) fail(caller context.Context, op string, start time.Time, err error) error {
	var ue *state.UnreachableError
	switch {
	case err == nil:
		return nil
	case caller.Err() != nil:
		return caller.Err()
	case errors.As(err, &ue) || !clientErr(err):
		return err // already the store's, or not the client's
	case unavailable(err):
		return &state.UnreachableError{Store: s.name, Op: op, Waited: time.Since(start), Err: err}
	case authRefused(err):
		return &state.AuthError{Store: s.name, User: s.user, Err: err}
	}
	return fmt.Errorf("state store %s: %s: %w", s.name, op, err)
}

// clientErr: err came from the etcd client (a server's answer, a gRPC
// status, a context the client gave up on).
func clientErr(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	_, ok := status.FromError(err)
	return ok
}

func grpcCode(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unknown
}

// unavailable: the cluster did not answer, or could not decide (no
// leader, a leader change, a server-side timeout).
func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || clientv3.IsConnCanceled(err) {
		return true
	}
	switch grpcCode(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	case codes.Unknown:
		// The deadline travels with the request: a server whose copy ran
		// out first answers with the context's error, as code Unknown.
		var se interface{ GRPCStatus() *status.Status }
		if !errors.As(err, &se) {
			return false
		}
		msg := se.GRPCStatus().Message()
		return msg == context.DeadlineExceeded.Error() || msg == context.Canceled.Error()
	}
	return false
}

func authRefused(err error) bool {
	for _, e := range []error{rpctypes.ErrAuthFailed, rpctypes.ErrPermissionDenied, rpctypes.ErrInvalidAuthToken,
		rpctypes.ErrUserEmpty, rpctypes.ErrUserNotFound, rpctypes.ErrAuthNotEnabled} {
		if errors.Is(err, e) {
			return true
		}
	}
	switch grpcCode(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		return true
	}
	return false
}

// outcomeKnown: a write that failed this way was refused, not lost in
// flight (the request was judged and rejected).
func outcomeKnown(err error) bool {
	if authRefused(err) {
		return true
	}
	switch grpcCode(err) {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.ResourceExhausted, codes.OutOfRange:
		return true
	}
	return false
}
