package vault

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

// TestUnreadableSecretRecordRemovedByRm: a secret record that cannot be
// read fails ls naming the file and `secret rm`, which removes it and its
// value files.
func TestUnreadableSecretRecordRemovedByRm(t *testing.T) {
	ctx := context.Background()
	e := newTestVault(t)
	if _, _, err := e.SetSecret(ctx, "tok", []byte("v")); err != nil {
		t.Fatal(err)
	}
	path := e.st.Locate(records.KindSecret, "tok")
	if err := os.WriteFile(path, []byte("{truncated"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := e.ListSecrets(ctx)
	var ce *state.CorruptRecordError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "kandev-exec secret rm tok") {
		t.Fatalf("ls: %v", err)
	}
	if _, err := e.RemoveSecret(ctx, "tok"); err != nil {
		t.Fatalf("rm: %v", err)
	}
	if list, err := e.ListSecrets(ctx); err != nil || len(list) != 0 {
		t.Fatalf("ls after rm: %v, %v", list, err)
	}
	if files := valueFiles(t, e, "tok"); len(files) != 0 {
		t.Fatalf("rm left %v", files)
	}
}
