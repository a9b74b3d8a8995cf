package profiles

import "github.com/kdlbs/kandev-exec/internal/redact"

// ExplainEntry is one row of `profile env --explain` (docs/contract.md JSON).
type ExplainEntry struct {
	Key        string   `json:"key"`
	Origins    []string `json:"origins"` // origins of the winning value, sorted
	Tier       Tier     `json:"tier"`
	Secret     bool     `json:"secret"` // reference-backed: value is redact.Mask
	Value      string   `json:"value"`
	Overridden []string `json:"overridden"` // losing origins, sorted; [] when none
	// Resolved is false when the winning reference cannot be fetched
	// (see Preflight); Problem then says why and what to run.
	Resolved bool   `json:"resolved"`
	Problem  string `json:"problem"`
	// Unmasked is true for a reference whose value is too short to be
	// masked in output (redact.MinLen): it shows as it is.
	Unmasked bool `json:"unmasked,omitempty"`
	Ref      Ref  `json:"-"` // the winning reference; zero for a literal
}

// Explain runs Resolve's selection without revealing anything and describes
// the winner of every key, in key order. Literals are shown as given (pass
// RuntimePlaceholders for the managed runtime); references show redact.Mask and
// count as resolved until Preflight says otherwise. A conflict is the same
// *ConflictError Resolve would return.
func Explain(defs []Definition) ([]ExplainEntry, error) {
	choices, err := selectDefinitions(defs)
	if err != nil {
		return nil, err
	}
	out := make([]ExplainEntry, len(choices))
	for i, c := range choices {
		e := ExplainEntry{Key: c.def.Key, Origins: c.origins, Tier: c.tier, Value: c.def.Literal, Overridden: []string{}, Resolved: true}
		if c.def.Ref.IsSet() {
			e.Secret, e.Value, e.Ref = true, redact.Mask, c.def.Ref
		}
		for _, l := range c.losers {
			e.Overridden = append(e.Overridden, l.Origin)
		}
		out[i] = e
	}
	return out, nil
}

// Preflight reveals each entry's winning reference, as a launch would,
// and drops the value at once. It marks those that cannot be revealed
// (Resolved false, Problem the error's text, which must not hold the
// value) and those too short to be masked (Unmasked). It returns the keys
// that failed, in entry order.
func Preflight(entries []ExplainEntry, reveal RevealFunc) []string {
	var failed []string
	for i := range entries {
		e := &entries[i]
		if !e.Ref.IsSet() {
			continue
		}
		v, err := reveal(e.Ref)
		if err != nil {
			e.Resolved, e.Problem = false, err.Error()
			failed = append(failed, e.Key)
			continue
		}
		e.Unmasked = redact.Unmasked(v)
	}
	return failed
}

// MinMaskedLen is the shortest reference value that output masks
// (redact.MinLen), for the warnings about shorter ones.
const MinMaskedLen = redact.MinLen

// UnmaskedKeys are the keys Preflight found too short to be masked, in
// entry order.
func UnmaskedKeys(entries []ExplainEntry) []string {
	var keys []string
	for _, e := range entries {
		if e.Unmasked {
			keys = append(keys, e.Key)
		}
	}
	return keys
}
