package profiles

// Masked is shown in place of every reference-backed value.
const Masked = "***"

// ExplainEntry is one row of `profile env --explain` (CONTRACT.md JSON).
type ExplainEntry struct {
	Key        string   `json:"key"`
	Origins    []string `json:"origins"` // origins of the winning value, sorted
	Tier       Tier     `json:"tier"`
	Secret     bool     `json:"secret"` // reference-backed: value is Masked
	Value      string   `json:"value"`
	Overridden []string `json:"overridden"` // losing origins, sorted; [] when none
}

// Explain runs Resolve's selection without revealing anything and describes
// the winner of every key, in key order. Literals are shown as given (pass
// RuntimePlaceholders for the managed runtime); references show Masked. A
// conflict is the same *ConflictError Resolve would return.
func Explain(defs []Definition) ([]ExplainEntry, error) {
	choices, err := selectDefinitions(defs)
	if err != nil {
		return nil, err
	}
	out := make([]ExplainEntry, len(choices))
	for i, c := range choices {
		e := ExplainEntry{Key: c.def.Key, Origins: c.origins, Tier: c.tier, Value: c.def.Literal, Overridden: []string{}}
		if c.def.Ref.IsSet() {
			e.Secret, e.Value = true, Masked
		}
		for _, l := range c.losers {
			e.Overridden = append(e.Overridden, l.Origin)
		}
		out[i] = e
	}
	return out, nil
}
