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
	Ref      Ref    `json:"-"` // the winning reference; zero for a literal
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

// Preflight asks check about each entry's winning reference, as a launch
// would fetch it, and marks those it fails: Resolved false and Problem
// the error's text, which must not hold the value. It returns the keys
// that failed, in entry order.
func Preflight(entries []ExplainEntry, check func(Ref) error) []string {
	var failed []string
	for i := range entries {
		e := &entries[i]
		if !e.Ref.IsSet() {
			continue
		}
		if err := check(e.Ref); err != nil {
			e.Resolved, e.Problem = false, err.Error()
			failed = append(failed, e.Key)
		}
	}
	return failed
}
