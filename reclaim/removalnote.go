package reclaim

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kdlbs/kandev-exec/internal/fsx"
)

// removalNote, in .kandev/, says that a directory's emptying began: a
// leftover holding it may have lost part of its work already (its .git,
// say) with no report of what it left (the helper killed, the CLI gone,
// or too much left to report), so it is never given its task's name
// back, where it would look like a checkout that lost its files. The
// removal writes it before it deletes anything and removes it just
// before the marker. Anything by its name stops the name back, so a
// forged one only keeps a leftover where it is.
const removalNote = "removal-began"

// maxRemovalNote bounds the note as the proof's record leaves it out
// (ourNotes): ours is one short line.
const maxRemovalNote = 256

var removalNoteRel = path.Join(metaDir, removalNote)

// noteRemoval writes the removal note into d's .kandev/, opened through
// d (never a link, never a mount). Not synced: it is for a removal cut
// short while the host runs on; one lost in a crash of the host only
// lets a half-emptied leftover have its name back, which removes
// nothing. Something other than a file by its name stops the name back
// as the note does, so it is left as it is.
func noteRemoval(d *dirFD) error {
	meta, err := d.open(metaDir)
	if err != nil {
		return err
	}
	defer meta.close()
	line := fmt.Sprintf("emptying began at %s (pid %d)\n", time.Now().UTC().Format(time.RFC3339), os.Getpid())
	err = fsx.WriteFile(filepath.Join(meta.path, removalNote), []byte(line), false)
	var ue *fsx.UnsafePathError
	if errors.As(err, &ue) {
		return nil
	}
	return err
}

// removalBegan reports whether tasks/<name> holds the removal note, or
// anything by its name; an error when that cannot be told.
func removalBegan(tasks *dirFD, name string) (bool, error) {
	d, err := tasks.open(name)
	if err != nil {
		return false, err
	}
	defer d.close()
	meta, err := d.open(metaDir)
	if err != nil {
		return false, err
	}
	defer meta.close()
	_, err = meta.lstat(removalNote)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}
