// Package helper is the program the CLI runs on a host, never typed by
// people: it serves the protocol (helper/protocol) on its standard input
// and output, each operation carried out by taskdir, controller or
// reclaim, and runs session controllers. Its main is
// cmd/kandev-exec-helper; the CLI answers the same arguments
// (cmd/hostside.go), so that it can be its own helper. Nothing here
// reaches the local side: no store, no vault, no profiles, no SSH.
package helper

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/kdlbs/kandev-exec/controller"
)

// Main is the helper binary's entry point. It returns the process's
// exit status.
//
//	serve                          one request on stdin, its answer on stdout
//	controller run --session-dir D a session controller (started by controller-start)
//	version                        protocol.VersionInfo as JSON
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	switch {
	case len(args) == 1 && args[0] == "serve":
		if err := Serve(ctx, stdin, stdout); err != nil {
			return fail(err)
		}
		return 0
	case len(args) == 1 && args[0] == "version":
		b, _ := json.Marshal(versionInfo())
		fmt.Fprintln(stdout, string(b))
		return 0
	case len(args) >= 2 && args[0] == "controller" && args[1] == "run":
		fs := flag.NewFlagSet("controller run", flag.ContinueOnError)
		fs.SetOutput(stderr)
		dir := fs.String("session-dir", "", "absolute session directory")
		if err := fs.Parse(args[2:]); err != nil || *dir == "" || fs.NArg() > 0 {
			fmt.Fprintln(stderr, "usage: controller run --session-dir DIR")
			return 2
		}
		if err := controller.Run(*dir, stdin); err != nil {
			return fail(err)
		}
		return 0
	}
	fmt.Fprintln(stderr, "usage: kandev-exec-helper serve | version | controller run --session-dir DIR\n(the kandev-exec CLI runs this on its hosts)")
	return 2
}
