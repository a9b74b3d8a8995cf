package task

import (
	"fmt"
	"io"
	"strings"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
	"github.com/kdlbs/kandev-exec/records"
)

// showProof prints what proved a removed directory safe: per checkout,
// the HEAD seen, then each ref or commit with how it was proven.
func showProof(w io.Writer, p *records.ReclaimProof) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "proof:     %s (%s), device %d inode %d, %s\n", cmdutil.Safe(p.Path), strings.Join(p.Methods(), ", "),
		p.Dev, p.Ino, cmdutil.Timestamp(p.At))
	for _, c := range p.Checkouts {
		fmt.Fprintf(w, "  checkout %s at %.12s\n", cmdutil.Safe(c.Path), c.Head)
		for _, x := range c.Commits {
			what := fmt.Sprintf("%.12s", x.Commit)
			if x.Ref != "" {
				what = cmdutil.Safe(x.Ref) + " " + what
			}
			fmt.Fprintf(w, "    %s: %s %s\n", what, x.Method, cmdutil.Safe(x.By))
		}
	}
}
