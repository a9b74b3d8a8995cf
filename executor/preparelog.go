package executor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

// prepareLogScript prints the prepare log in the task directory (the
// command's working directory), refusing anything but a regular file: a
// link planted there is never followed.
const prepareLogScript = `f=.kandev/` + PrepareLog + `
if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then echo "$PWD/$f is not a regular file: not read" >&2; exit 3; fi
[ -e "$f" ] || exit 4
exec cat -- "$f"
`

// PrepareLog writes the prepare log of session id's task to w: the last
// prepare script's whole output, masked, as the helper kept it.
func (e *Executor) PrepareLog(ctx context.Context, id string, w io.Writer) error {
	s, _, err := e.GetSession(ctx, id)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	code, err := e.Exec(ctx, s.TaskID, []string{"sh", "-c", prepareLogScript}, nil, w, &stderr)
	switch {
	case err != nil:
		return err
	case code == 4:
		return fmt.Errorf("task %s has no prepare log: its profile has no prepare script, or none has run in %s yet", s.TaskID, s.TaskID)
	case code != 0:
		return fmt.Errorf("task %s: reading its prepare log failed (exit %d): %s", s.TaskID, code, strings.TrimSpace(stderr.String()))
	}
	return nil
}
