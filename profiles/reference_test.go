package profiles

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// jsonKeys lists a struct's JSON field names, recursing into slices of
// structs as "field[].sub".
func jsonKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, prefix+name)
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct && f.Type.Elem() != reflect.TypeOf(EnvEntry{}) {
			out = append(out, jsonKeys(f.Type.Elem(), prefix+name+"[].")...)
		}
	}
	return out
}

func fieldKeys(fs []Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Key
	}
	return out
}

// Every key of the schema is documented, and nothing else is: a field
// added to Profile without a line in the reference fails here.
func TestReferenceCoversTheSchema(t *testing.T) {
	for _, tc := range []struct {
		name   string
		typ    reflect.Type
		fields []Field
	}{{"profile", reflect.TypeOf(Profile{}), ProfileFields}, {"agent", reflect.TypeOf(AgentPreset{}), AgentFields}} {
		schema, documented := jsonKeys(tc.typ, ""), fieldKeys(tc.fields)
		slices.Sort(schema)
		slices.Sort(documented)
		if !slices.Equal(schema, documented) {
			t.Errorf("%s: schema keys %q\ndocumented    %q", tc.name, schema, documented)
		}
		for _, f := range tc.fields {
			if f.Type == "" || f.Example == "" || f.Doc == "" || f.Required == (f.Default != "") {
				t.Errorf("%s key %s: want a type, an example, a doc, and a default exactly when not required: %+v", tc.name, f.Key, f)
			}
		}
	}
}

// The example files decode, and each sets every documented key, so the
// example shows them all and the decoder accepts every one.
func TestExamplesSetEveryKey(t *testing.T) {
	p, err := DecodeProfile("example.yaml", []byte(ExampleProfile))
	if err != nil {
		t.Fatalf("ExampleProfile: %v", err)
	}
	if err := p.CheckLaunchable(); err != nil {
		t.Fatal(err)
	}
	a, err := DecodeAgent("agent.yaml", []byte(ExampleAgent))
	if err != nil {
		t.Fatalf("ExampleAgent: %v", err)
	}
	for _, tc := range []struct {
		src    source
		fields []Field
	}{{p.src, ProfileFields}, {a.src, AgentFields}} {
		for _, f := range tc.fields {
			path := strings.ReplaceAll(f.Key, "[]", "[0]")
			if tc.src.lines[path] == 0 {
				t.Errorf("%s: the example does not set %s", tc.src.file, f.Key)
			}
		}
	}
}

// Each field's example value decodes under its key.
func TestFieldExamplesDecode(t *testing.T) {
	for _, f := range ProfileFields {
		doc := "name: p\nhost: h\nrepositories: [{name: r, url: /u}]\n"
		switch _, sub, nested := strings.Cut(f.Key, "[]."); {
		case nested:
			repo := map[string]string{"name": "s", "url": "/v"}
			repo[sub] = f.Example
			doc = "name: p\nhost: h\nrepositories:\n  - {name: r, url: /u}\n  - {name: " + repo["name"] + ", url: " + repo["url"]
			if sub != "name" && sub != "url" {
				doc += ", " + sub + ": " + f.Example
			}
			doc += "}\n"
		case f.Key == "name" || f.Key == "host":
			doc = strings.Replace(doc, f.Key+": "+f.Key[:1], f.Key+": "+f.Example, 1)
		case f.Key == "repositories":
			doc = "name: p\nhost: h\nrepositories: " + f.Example + "\n"
		default:
			doc += f.Key + ": " + f.Example + "\n"
		}
		if _, err := DecodeProfile("f.yaml", []byte(doc)); err != nil {
			t.Errorf("%s: example %q: %v\n%s", f.Key, f.Example, err, doc)
		}
	}
	for _, f := range AgentFields {
		doc := "name: a\ncommand: [x]\n"
		if f.Key == "env" {
			doc += "env: " + f.Example + "\n"
		} else {
			doc = strings.Replace(doc, f.Key+": "+map[string]string{"name": "a", "command": "[x]"}[f.Key], f.Key+": "+f.Example, 1)
		}
		if _, err := DecodeAgent("a.yaml", []byte(doc)); err != nil {
			t.Errorf("agent %s: example %q: %v", f.Key, f.Example, err)
		}
	}
}

func TestCheckLaunchable(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		ok   bool
	}{
		{"name: p\nhost: h\nrepositories: [{name: a, url: /u}]\n", true},
		{"name: p\nhost: h\nprepare_script: git clone /u .\n", true},
		{"name: p\nhost: h\n", false},
		{"name: p\nhost: h\nprepare_script: \"  \\n\"\n", false}, // blank is no script
	} {
		p, err := DecodeProfile("p.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		err = p.CheckLaunchable()
		if tc.ok != (err == nil) {
			t.Errorf("%q: CheckLaunchable = %v", tc.yaml, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), `p.yaml: profile "p" cannot launch: it has no repositories and no prepare_script`) {
			t.Errorf("message %q", err)
		}
	}
}
