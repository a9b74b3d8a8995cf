package taskdir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// Owner is .kandev/owner.json: who made the task directory, so that
// nothing later touches (or deletes) a directory it cannot prove is ours.
type Owner struct {
	InstallationID string    `json:"installation_id"`
	TaskID         string    `json:"task_id"`
	OperationID    string    `json:"operation_id"`
	Created        time.Time `json:"created"`
}

const (
	metaDir   = ".kandev"
	ownerFile = "owner.json"
)

// claimOwner writes want as the owner of taskDir, or returns the owner
// already recorded there. Another task's directory is refused; the same
// task under another operation id is a resume or a recovery and keeps the
// recorded owner.
func claimOwner(taskDir string, want Owner) (Owner, error) {
	meta := filepath.Join(taskDir, metaDir)
	path := filepath.Join(meta, ownerFile)
	// Checked before the file, so a symlinked .kandev is never followed.
	exists, err := isDir(meta)
	var b []byte
	if err == nil && exists {
		b, exists, err = readIfExists(path)
	}
	if err != nil {
		return Owner{}, err
	}
	if exists {
		var have Owner
		if err := json.Unmarshal(b, &have); err != nil {
			return Owner{}, errorf(CodeOwnerMismatch, "%s is unreadable (%v); refusing to adopt %s", path, err, taskDir)
		}
		if have.TaskID != want.TaskID || have.InstallationID != want.InstallationID {
			return Owner{}, errorf(CodeOwnerMismatch, "%s belongs to task %q of installation %q, not task %q of installation %q",
				taskDir, have.TaskID, have.InstallationID, want.TaskID, want.InstallationID)
		}
		return have, nil
	}
	if err := unclaimedIsEmpty(taskDir); err != nil {
		return Owner{}, err
	}
	if _, err := ensurePrivateDir(meta); err != nil {
		return Owner{}, err
	}
	if want.Created.IsZero() {
		want.Created = time.Now().UTC()
	}
	out, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		return Owner{}, errorf(CodeIO, "encode owner: %v", err)
	}
	return want, writeFileAtomic(path, append(out, '\n'))
}

// unclaimedIsEmpty refuses to claim a directory without an owner that
// holds anything but our own (empty) metadata directory: it was made by
// someone else, and claiming it would later make it ours to delete.
func unclaimedIsEmpty(taskDir string) error {
	entries, err := os.ReadDir(taskDir)
	if err != nil {
		return errorf(CodeIO, "read %s: %v", taskDir, err)
	}
	for _, e := range entries {
		if e.Name() != metaDir {
			return errorf(CodeOwnerMismatch, "%s has no owner marker but is not empty (holds %q); refusing to adopt it", taskDir, e.Name())
		}
	}
	return nil
}
