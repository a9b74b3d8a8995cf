// Command kandev-exec-helper is what the kandev-exec CLI uploads to a
// host and runs there: task directories, session controllers, the host
// half of reclamation and the probes. It is built without the CLI's
// client-only dependencies, so the first upload over a slow link is
// small; see the helper package, and helper/protocol for the protocol.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kdlbs/kandev-exec/helper"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := helper.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
