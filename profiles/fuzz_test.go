package profiles

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
)

func FuzzResolve(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 1, 0, 1})          // EP v1 vs AP v2: override
	f.Add([]byte{0, 0, 1, 0, 0, 1, 0, 0})          // EP secret vs AP literal: veto
	f.Add([]byte{0, 6, 1, 0, 0, 7, 1, 0})          // two repositories, one secret: merge
	f.Add([]byte{1, 2, 0, 0, 1, 0, 0, 1, 0, 2, 1}) // partial trailing definition
	f.Add([]byte{0, 0, 1, 2})                      // a reference whose reveal fails
	f.Fuzz(func(t *testing.T, data []byte) {
		var defs []Definition
		for i := 0; i+4 <= len(data) && len(defs) < 64; i += 4 {
			defs = append(defs, genDefinition([4]byte(data[i:i+4])))
		}
		checkInvariants(t, defs, slices.Reverse[[]Definition])
	})
}

func FuzzDecodeProfile(f *testing.F) {
	f.Add([]byte(validProfile))
	f.Add([]byte("name: p\nhost: h\nenv: {A: {secret: x}, B: 1.10, C: true}\n"))
	f.Add([]byte("name: p\nhost: h\nenvv: {}\n"))
	f.Add([]byte("name: p\nname: q\n"))
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"))
	f.Add([]byte("name: p\n---\nname: q\n"))
	f.Add([]byte("- [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeProfile("f.yaml", data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			return
		}
		if err := p.Validate(nil); err != nil {
			t.Fatalf("decoded profile fails validation: %v", err)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back Profile
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("stored form does not read back: %v", err)
		}
		back.src = p.src
		if !reflect.DeepEqual(&back, p) {
			t.Fatalf("JSON round trip changed the profile:\n %+v\n %+v", p, &back)
		}
		_, _ = Explain(Assemble(RuntimePlaceholders(), p, nil, nil))
	})
}
