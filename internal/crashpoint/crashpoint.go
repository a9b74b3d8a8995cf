// Package crashpoint lets crash-convergence tests kill kandev-exec at a
// named point: a build with the `crashpoints` tag dies by SIGKILL the
// first time it reaches the point named in $KANDEV_EXEC_CRASH_AT. Every
// other build compiles Hit to nothing, so no release binary can be made
// to crash this way.
package crashpoint

// EnvVar names the point a crashpoints build dies at.
const EnvVar = "KANDEV_EXEC_CRASH_AT"
