// Package crashpoint lets crash-convergence tests stop kandev-exec at a
// named point: a build with the `crashpoints` tag dies by SIGKILL the
// first time it reaches the point named in $KANDEV_EXEC_CRASH_AT, and
// freezes itself (SIGSTOP, until a SIGCONT) at the point named in
// $KANDEV_EXEC_FREEZE_AT: a holder that stops renewing its claim without
// dying. Every other build compiles Hit to nothing, so no release binary
// can be made to crash or freeze this way.
package crashpoint

// EnvVar names the point a crashpoints build dies at.
const EnvVar = "KANDEV_EXEC_CRASH_AT"

// FreezeVar names the point a crashpoints build freezes at, once.
const FreezeVar = "KANDEV_EXEC_FREEZE_AT"
