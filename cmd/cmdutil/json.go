package cmdutil

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// WriteJSON prints v as indented JSON followed by a newline; through the
// --jq filter or the --template when w is the reshaped stdout (see
// SetupFilter). Every command prints its --json document here, so every
// one gets both.
func WriteJSON(w io.Writer, v any) error {
	if j, ok := w.(jsonFilter); ok {
		return j.filter(v)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// WantsJSON reports whether args ask for --json, reading them the way c's
// flags would. Flag parsing stops at the first bad flag, so a --json after
// it never reaches the flag set; the caller still asked for the envelope.
// Arguments after `--` belong to a remote command and are not read.
func WantsJSON(c *cobra.Command, args []string) bool {
	want := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, val, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var fl *pflag.Flag
		if strings.HasPrefix(a, "--") {
			fl = lookupFlag(c, name)
		} else if len(name) == 1 {
			fl = c.Flags().ShorthandLookup(name)
		}
		switch {
		case fl != nil && fl.Name == "json":
			b, err := strconv.ParseBool(val)
			want = !inline || (err == nil && b)
		case fl != nil && (fl.Name == "jq" || fl.Name == "template"):
			want = true // --jq and --template imply --json
			if !inline {
				i++
			}
		case fl != nil && !inline && fl.NoOptDefVal == "":
			i++ // the next argument is this flag's value, even "--json"
		}
	}
	return want
}

func lookupFlag(c *cobra.Command, name string) *pflag.Flag {
	if c == nil {
		return nil
	}
	if fl := c.Flags().Lookup(name); fl != nil {
		return fl
	}
	return c.InheritedFlags().Lookup(name)
}
