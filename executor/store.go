package executor

import (
	"context"
	"fmt"

	"github.com/kdlbs/kandev-exec/state"
)

// MigrateStore copies the executor's store into dst (`store migrate`):
// the journal with its epoch and sequence numbers, then every record at
// its revision (state.Copy). progress is told each step. Secret values
// stay in the vault: the records name them only.
func (e *Executor) MigrateStore(ctx context.Context, dst state.Store, progress func(format string, a ...any)) (state.CopyReport, error) {
	from, ok := e.cfg.Store.(state.Copier)
	into, ok2 := dst.(state.Copier)
	if !ok || !ok2 {
		return state.CopyReport{}, fmt.Errorf("cannot copy from %T into %T", e.cfg.Store, dst)
	}
	return state.Copy(ctx, from, into, progress)
}
