//go:build embedhelpers

package helperbin

import (
	"embed"
	"io/fs"
)

// A release build (`make dist`, goreleaser) compresses the four helpers
// into embedded/ first, then builds the CLI with -tags embedhelpers.
//
//go:embed embedded/*.gz embedded/SHA256SUMS
var files embed.FS

var embedded = func() fs.FS {
	sub, err := fs.Sub(files, "embedded")
	if err != nil {
		panic(err)
	}
	return sub
}()
