//go:build crashpoints

package crashpoint

import (
	"os"
	"sync"
	"syscall"
)

var (
	at       = os.Getenv(EnvVar)
	freezeAt = os.Getenv(FreezeVar)
	frozen   sync.Once
)

// Hit kills this process, with no chance to clean up, when name is the
// point $KANDEV_EXEC_CRASH_AT names, and stops it (every goroutine: its
// claim renewals too) the first time name is the point
// $KANDEV_EXEC_FREEZE_AT names.
func Hit(name string) {
	if name == "" {
		return
	}
	if name == at {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	if name == freezeAt {
		frozen.Do(func() { _ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) })
	}
}
