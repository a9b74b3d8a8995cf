package sshconfig

import (
	"context"
	"slices"
	"strings"
)

// sentinelHost is a name no ssh config defines (.invalid is reserved by
// RFC 2606), used to see what an undefined name resolves to.
const sentinelHost = "kandev-exec-undefined-alias.invalid"

// AliasDefined reports whether the config says anything specific about
// alias: it resolves alias and a name nobody defines, and compares them
// with the names swapped. `Host *` defaults apply to both and cancel out.
func AliasDefined(ctx context.Context, alias string, opts ResolveOptions) (bool, error) {
	got, err := lookup(ctx, alias, Overrides{}, opts)
	if err != nil {
		return false, err
	}
	base, err := lookup(ctx, sentinelHost, Overrides{}, opts)
	if err != nil {
		return false, err
	}
	for k := range used {
		// ssh lowercases the host name it was given, so compare folded.
		a := make([]string, len(got[k]))
		for i, v := range got[k] {
			a[i] = strings.ToLower(v)
		}
		b := make([]string, len(base[k]))
		for i, v := range base[k] {
			b[i] = strings.ToLower(strings.ReplaceAll(v, sentinelHost, alias))
		}
		if !slices.Equal(a, b) {
			return true, nil
		}
	}
	return false, nil
}
