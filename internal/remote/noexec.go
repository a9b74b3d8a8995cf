package remote

import "fmt"

// NoexecError: the workdir root is on a filesystem mounted noexec, so no
// helper put there could run; found before anything is uploaded.
type NoexecError struct {
	Host, Root string
	Mount      string // its mount point, "" when df did not say
}

func (e *NoexecError) Error() string {
	on := "a filesystem mounted noexec"
	if e.Mount != "" {
		on = fmt.Sprintf("%s, mounted noexec", e.Mount)
	}
	return fmt.Sprintf("workdir root %s on %s is on %s: the helper cannot run from there", e.Root, e.Host, on)
}

// Hint says what to change.
func (e *NoexecError) Hint() string {
	return "use a workdir root on a filesystem that allows running programs: the profile's workdir_root, or the host's (`kandev-exec host set NAME --workdir-root DIR`)"
}
