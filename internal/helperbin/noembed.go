//go:build !embedhelpers

package helperbin

import "io/fs"

// embedded is nil in a build without helpers (`go install`, `make
// build`): the other sources apply.
var embedded fs.FS
