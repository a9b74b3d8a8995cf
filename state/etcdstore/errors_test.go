package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestClassification: which client errors mean unreachable, refused
// credentials, or a write that was judged (not lost in flight).
// Regression: a server whose copy of the request's deadline ran out
// answers code Unknown "context deadline exceeded"; that was exit 1.
func TestClassification(t *testing.T) {
	tests := []struct {
		name                     string
		err                      error
		unreachable, auth, known bool
	}{
		{"client deadline", context.DeadlineExceeded, true, false, false},
		{"server deadline", status.Error(codes.Unknown, "context deadline exceeded"), true, false, false},
		{"wrapped server deadline", fmt.Errorf("x: %w", status.Error(codes.Unknown, "context deadline exceeded")), true, false, false},
		{"no leader", rpctypes.ErrNoLeader, true, false, false},
		{"leader changed", rpctypes.ErrLeaderChanged, true, false, false},
		{"connection lost", rpctypes.ErrTimeoutDueToConnectionLost, true, false, false},
		{"unavailable", status.Error(codes.Unavailable, "error reading from server: EOF"), true, false, false},
		{"bad password", rpctypes.ErrAuthFailed, false, true, true},
		{"permission", rpctypes.ErrPermissionDenied, false, true, true},
		{"no user", rpctypes.ErrUserEmpty, false, true, true},
		{"lease gone", rpctypes.ErrLeaseNotFound, false, false, true},
		{"no space", rpctypes.ErrNoSpace, false, false, true},
		{"too large", rpctypes.ErrRequestTooLarge, false, false, true},
		{"other unknown", status.Error(codes.Unknown, "something else"), false, false, false},
		{"not the client's", errors.New("plain"), false, false, false},
	}
	for _, tc := range tests {
		if got := unavailable(tc.err); got != tc.unreachable {
			t.Errorf("%s: unavailable = %v", tc.name, got)
		}
		if got := authRefused(tc.err); got != tc.auth {
			t.Errorf("%s: authRefused = %v", tc.name, got)
		}
		if got := outcomeKnown(tc.err); got != tc.known {
			t.Errorf("%s: outcomeKnown = %v", tc.name, got)
		}
	}
}
