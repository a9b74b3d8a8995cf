package profiles

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const validProfile = `name: prod
host: prod-box
workdir_root: ~/.kandev
shell: bash
env:
  NODE_ENV: production
  API_TOKEN: {secret: api-token}
  PORT: 8080
  VERSION: 1.10
  DEBUG: true
  EMPTY: ""
  GH: {from_env: GITHUB_TOKEN}
  CERT: {from_file: ~/certs/ca.pem}
  lower_case: kept
repositories:
  - name: app
    url: /srv/git/app.git
    branch: main
    secrets: {DEPLOY_TOKEN: {secret: deploy}}
  - name: docs
    url: https://example.com/docs.git
prepare_script: |
  make deps
cleanup_script: ""
reclaim_task_dir: true
`

func TestDecodeProfile(t *testing.T) {
	p, err := DecodeProfile("prod.yaml", []byte(validProfile))
	if err != nil {
		t.Fatal(err)
	}
	want := &Profile{
		Name: "prod", Host: "prod-box", WorkdirRoot: "~/.kandev", Shell: "bash",
		Env: []EnvEntry{
			{Key: "NODE_ENV", Literal: "production"},
			{Key: "API_TOKEN", Ref: Ref{RefSecret, "api-token"}},
			{Key: "PORT", Literal: "8080"},
			{Key: "VERSION", Literal: "1.10"}, // source text, not the float 1.1
			{Key: "DEBUG", Literal: "true"},
			{Key: "EMPTY", Literal: ""},
			{Key: "GH", Ref: Ref{RefFromEnv, "GITHUB_TOKEN"}},
			{Key: "CERT", Ref: Ref{RefFromFile, "~/certs/ca.pem"}},
			{Key: "lower_case", Literal: "kept"},
		},
		Repositories: []Repository{
			{Name: "app", URL: "/srv/git/app.git", Branch: "main", Secrets: []EnvEntry{{Key: "DEPLOY_TOKEN", Ref: Ref{RefSecret, "deploy"}}}},
			{Name: "docs", URL: "https://example.com/docs.git", Secrets: []EnvEntry{}},
		},
		PrepareScript: "make deps\n", ReclaimTaskDir: true,
	}
	p.src = source{}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got  %+v\nwant %+v", p, want)
	}
}

func TestDecodeProfileDefaults(t *testing.T) {
	p, err := DecodeProfile("p.yaml", []byte("name: p\nhost: h\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.WorkdirRoot != "" || p.Shell != DefaultShell || p.Env == nil || p.Repositories == nil || p.ReclaimTaskDir {
		t.Fatalf("defaults: %+v", p)
	}
}

func TestDecodeProfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
		key, msg   string
	}{
		{"unknown key", "name: p\nhost: h\nenvv: {}\n", 3, "envv", `unknown key "envv" in profile`},
		{"unknown key is case-sensitive", "Name: p\n", 1, "Name", `unknown key "Name" in profile`},
		{"unknown repository key", "name: p\nhost: h\nrepositories:\n  - name: a\n    url: u\n    secret: {}\n", 6, "secret", `unknown key "secret" in repositories[0]`},
		{"duplicate key", "name: p\nhost: h\nname: q\n", 3, "name", `duplicate key "name" in profile (first at line 1)`},
		{"duplicate env key", "name: p\nhost: h\nenv:\n  A: x\n  A: y\n", 5, "A", `duplicate key "A" in env (first at line 4)`},
		{"wrong type for a string", "name: [a]\n", 1, "name", `"name" must be a string, not a list`},
		{"null for a string", "name:\n", 1, "name", `"name" must be a string, not null`},
		{"wrong type for a bool", "name: p\nhost: h\nreclaim_task_dir: \"yes\"\n", 3, "reclaim_task_dir", `"reclaim_task_dir" must be true or false, not a str scalar`},
		{"env is not a mapping", "name: p\nhost: h\nenv: [A]\n", 3, "env", "env must be a mapping, not a list"},
		{"repositories is not a list", "name: p\nhost: h\nrepositories: {a: b}\n", 3, "repositories", `"repositories" must be a list, not a mapping`},
		{"entry with null", "name: p\nhost: h\nenv:\n  A:\n", 4, "A", `env "A" has no value`},
		{"entry with empty mapping", "name: p\nhost: h\nenv:\n  A: {}\n", 4, "A", `env "A": want exactly one of`},
		{"entry with two references", "name: p\nhost: h\nenv:\n  A: {secret: x, from_env: Y}\n", 4, "A", `env "A": want exactly one of`},
		{"entry with unknown reference", "name: p\nhost: h\nenv:\n  A: {secrets: x}\n", 4, "A", "unknown reference"},
		{"entry with a list", "name: p\nhost: h\nenv:\n  A: [x]\n", 4, "A", `env "A" must be a string or one of`},
		{"reference with a mapping", "name: p\nhost: h\nenv:\n  A: {secret: {x: y}}\n", 4, "A", `env "A": secret must be a string, not a mapping`},
		{"custom tag", "name: !!binary aGk=\n", 1, "name", `"name" must be a string, not a binary scalar`},
		{"alias", "name: &n p\nhost: *n\n", 2, "host", "aliases are not supported"},
		{"merge key", "name: p\nhost: h\nenv:\n  <<: {A: b}\n", 4, "<<", "merge keys"},
		{"non-scalar key", "name: p\n? [a]\n: b\n", 2, "", "keys in profile must be plain strings"},
		{"bad env name", "name: p\nhost: h\nenv:\n  1BAD: x\n", 4, "1BAD", `env key "1BAD" is not a valid name`},
		{"env name with a dash", "name: p\nhost: h\nenv:\n  A-B: x\n", 4, "A-B", `env key "A-B" is not a valid name`},
		{"reserved prefix", "name: p\nhost: h\nenv:\n  KANDEV_TASK_ID: x\n", 4, "KANDEV_TASK_ID", "is reserved for the runtime"},
		{"reserved name", "name: p\nhost: h\nenv:\n  TASK_DESCRIPTION: x\n", 4, "TASK_DESCRIPTION", "is reserved for the runtime"},
		{"reserved in a repository", "name: p\nhost: h\nrepositories:\n  - name: a\n    url: u\n    secrets: {KANDEV_X: {secret: s}}\n", 6, "KANDEV_X", "reserved"},
		{"literal in a repository binding", "name: p\nhost: h\nrepositories:\n  - name: a\n    url: u\n    secrets:\n      TOKEN: hunter2\n", 7, "TOKEN", "repository bindings are secret-only"},
		{"from_env in a repository binding", "name: p\nhost: h\nrepositories:\n  - name: a\n    url: u\n    secrets: {TOKEN: {from_env: T}}\n", 6, "TOKEN", "secret-only: want {secret: NAME}, not {from_env: ...}"},
		{"from_file in a repository binding", "name: p\nhost: h\nrepositories:\n  - name: a\n    url: u\n    secrets: {TOKEN: {from_file: /t}}\n", 6, "TOKEN", "secret-only"},
		{"bad secret name", "name: p\nhost: h\nenv:\n  A: {secret: \"../x\"}\n", 4, "A", "secret name is not valid"},
		{"bad from_env name", "name: p\nhost: h\nenv:\n  A: {from_env: \"A B\"}\n", 4, "A", "from_env must name"},
		{"relative from_file", "name: p\nhost: h\nenv:\n  A: {from_file: ca.pem}\n", 4, "A", "from_file must be an absolute path"},
		{"NUL in a value", "name: p\nhost: h\nenv:\n  A: \"a\\0b\"\n", 4, "A", "NUL"},
		{"bad profile name", "name: -p\nhost: h\n", 1, "name", `"name" "-p" is not a valid name`},
		{"missing name", "host: h\n", 0, "name", `missing "name" in profile`},
		{"missing host", "name: p\n", 0, "host", `missing "host" in profile`},
		{"relative workdir_root", "name: p\nhost: h\nworkdir_root: work\n", 3, "workdir_root", "must be ~, ~/PATH or /PATH"},
		{"dotdot workdir_root", "name: p\nhost: h\nworkdir_root: ~/a/../b\n", 3, "workdir_root", "must be ~"},
		{"root workdir_root", "name: p\nhost: h\nworkdir_root: /\n", 3, "workdir_root", "must be ~"},
		{"fish is not POSIX", "name: p\nhost: h\nshell: fish\n", 3, "shell", `shell "fish" is not supported`},
		{"shell path", "name: p\nhost: h\nshell: /bin/bash\n", 3, "shell", "is not supported"},
		{"duplicate repository", "name: p\nhost: h\nrepositories:\n  - {name: a, url: u}\n  - {name: a, url: v}\n", 5, "name", `duplicate repository name "a"`},
		{"repository without url", "name: p\nhost: h\nrepositories:\n  - name: a\n", 4, "url", `repositories[0]: missing "url"`},
		{"url like an option", "name: p\nhost: h\nrepositories:\n  - {name: a, url: --upload-pack=x}\n", 4, "url", "must not start with -"},
		{"bad branch", "name: p\nhost: h\nrepositories:\n  - {name: a, url: u, branch: a..b}\n", 4, "branch", "not a valid git branch"},
		{"bad repository name", "name: p\nhost: h\nrepositories:\n  - {name: a/b, url: u}\n", 4, "name", "is not a valid name"},
		{"two documents", "name: p\nhost: h\n---\nname: q\n", 3, "", "one document per file"},
		{"empty file", "", 0, "", "empty file"},
		{"comment only", "# nothing\n", 0, "", "empty file"},
		{"not a mapping", "just text\n", 1, "profile", "profile must be a mapping, not a str scalar"},
		{"syntax error", "name: p\nhost: h\n  bad: indent\n", 3, "", "invalid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := DecodeProfile("prod.yaml", []byte(tc.yaml))
			if p != nil || err == nil {
				t.Fatalf("decoded %+v, want an error", p)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%T is not a *DecodeError: %v", err, err)
			}
			if de.File != "prod.yaml" || de.Line != tc.line || de.Key != tc.key || !strings.Contains(de.Msg, tc.msg) {
				t.Fatalf("got %+v (%v), want line %d key %q msg ~ %q", de, err, tc.line, tc.key, tc.msg)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("a value leaked into %q", err)
			}
		})
	}
}

// A syntax error names the line and column to change, not where the
// parser's mapping began (it says "did not find expected key" one line
// early, and calls a tab "a character that cannot start any token").
func TestSyntaxErrorPosition(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"tab indenting a key", "name: p\nenv:\n\tA: b\n",
			"p.yaml:3:1: invalid YAML: a tab indents this line: YAML indents with spaces only"},
		{"tab after spaces", "name: p\nenv:\n  A: b\n \tB: c\n",
			"p.yaml:4:2: invalid YAML: a tab indents this line: YAML indents with spaces only"},
		{"key indented less than its siblings", "name: p\nhost: h\nenv:\n  A: x\n B: y\n",
			"p.yaml:5:2: invalid YAML: this line is indented like none of the keys above it: line it up with the keys of its mapping"},
		{"key indented under a value", "name: p\n  host: h\n",
			"p.yaml:2:7: invalid YAML: a ':' where no key can start: quote a value that holds ': ', or indent this line as deep as the keys it belongs with"},
		{"colon in a plain value", "name: p\nhost: a: b\n",
			"p.yaml:2:8: invalid YAML: a ':' where no key can start: quote a value that holds ': ', or indent this line as deep as the keys it belongs with"},
		{"list item key out of line", "name: p\nrepositories:\n  - name: a\n   url: u\n",
			"p.yaml:4:4: invalid YAML: this line is indented like neither the list's '- ' items nor their keys: line it up with one of them"},
		{"no colon", "name: p\nhost h\nshell: sh\n",
			"p.yaml:2:1: invalid YAML: expected a key and ':' (key: value) on this line"},
		{"quote never closed", "name: p\nhost: \"h\nshell: sh\n",
			"p.yaml:2:7: invalid YAML: this quote, '[' or '{' is never closed"},
		{"reserved indicator", "name: p\nhost: @h\n",
			"p.yaml:2:7: invalid YAML: a value cannot start with '@' (YAML keeps it for later use): put the value in quotes"},
		{"columns count characters", "name: p\nenv:\n  É: x\n É: y\n",
			"p.yaml:4:2: invalid YAML: this line is indented like none of the keys above it: line it up with the keys of its mapping"},
		{"in a second document", "name: p\nhost: h\n---\na: b: c\n",
			"p.yaml:4:5: invalid YAML: a ':' where no key can start: quote a value that holds ': ', or indent this line as deep as the keys it belongs with"},
		{"CRLF line ends", "name: p\r\nhost: h\r\n\tshell: sh\r\n",
			"p.yaml:3:1: invalid YAML: a tab indents this line: YAML indents with spaces only"},
		{"no newline at the end", "name: p\nhost: h\n  shell: sh",
			"p.yaml:3:8: invalid YAML: a ':' where no key can start: quote a value that holds ': ', or indent this line as deep as the keys it belongs with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeProfile("p.yaml", []byte(tc.yaml))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%T is not a *DecodeError", err)
			}
		})
	}
}

func TestDecodeErrorFormat(t *testing.T) {
	_, err := DecodeProfile("prod.yaml", []byte("name: p\nhost: h\nshell: sh\n\n\n\nenvv: {}\n"))
	if got, want := err.Error(), `prod.yaml:7: unknown key "envv" in profile (did you mean env?)`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	for e, want := range map[*DecodeError]string{
		{File: "f", Msg: "m"}:                  "f: m",
		{Line: 3, Msg: "m"}:                    "line 3: m",
		{Msg: "m", Key: "k"}:                   "m",
		{File: "f", Line: 2, Msg: "m"}:         "f:2: m",
		{File: "f", Line: 2, Col: 5, Msg: "m"}: "f:2:5: m",
	} {
		if e.Error() != want {
			t.Errorf("%+v: %q, want %q", e, e.Error(), want)
		}
	}
}

// An unknown key names the known keys it is close to, at its own level
// of the file: the top level, a repository, an agent preset, a reference.
func TestDecodeSuggestsKnownKeys(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
		agent            bool
	}{
		{"repos", "name: p\nhost: h\nrepos: []\n", `p.yaml:3: unknown key "repos" in profile (did you mean repositories?)`, false},
		{"hostname", "name: p\nhostname: h\n", `p.yaml:2: unknown key "hostname" in profile (did you mean host?)`, false},
		{"prepare", "name: p\nhost: h\nprepare: make\n", `p.yaml:3: unknown key "prepare" in profile (did you mean prepare_script or prepare_timeout?)`, false},
		{"dash for underscore", "name: p\nhost: h\nworkdir-root: /x\n", `p.yaml:3: unknown key "workdir-root" in profile (did you mean workdir_root?)`, false},
		{"nothing close", "name: p\nhost: h\nzzzzzz: 1\n", `p.yaml:3: unknown key "zzzzzz" in profile`, false},
		{"repository key", "name: p\nhost: h\nrepositories:\n  - name: a\n    url: u\n    secret: {}\n", `p.yaml:6: unknown key "secret" in repositories[0] (did you mean secrets?)`, false},
		{"reference kind", "name: p\nhost: h\nenv:\n  A: {secrets: x}\n", `p.yaml:4: env "A": unknown reference (did you mean secret?) (want one of {secret: NAME}, {from_env: VAR}, {from_file: PATH})`, false},
		{"agent", "name: a\ncomand: [x]\n", `p.yaml:2: unknown key "comand" in agent (did you mean command?)`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.agent {
				_, err = DecodeAgent("p.yaml", []byte(tc.yaml))
			} else {
				_, err = DecodeProfile("p.yaml", []byte(tc.yaml))
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

// Validation reports every problem at once, in line order.
func TestValidateReportsAllInLineOrder(t *testing.T) {
	_, err := DecodeProfile("p.yaml", []byte("name: p\nhost: h\nshell: fish\nenv:\n  KANDEV_A: x\n  1B: y\n"))
	var de *DecodeError
	if !errors.As(err, &de) || de.Line != 3 {
		t.Fatalf("first error %v", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "p.yaml:5:") || !strings.HasPrefix(lines[2], "p.yaml:6:") {
		t.Fatalf("got %q", lines)
	}
}

func TestValidateKnownHost(t *testing.T) {
	p, err := DecodeProfile("p.yaml", []byte("name: p\nhost: nowhere\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(func(h string) bool { return h == "box" }); err == nil ||
		err.Error() != "p.yaml:2: host \"nowhere\" is not a known host (add it with `kandev-exec host add nowhere`)" {
		t.Fatalf("got %v", err)
	}
	if err := p.Validate(func(h string) bool { return h == "nowhere" }); err != nil {
		t.Fatal(err)
	}
}

// A profile read back from the store has no positions; errors still name
// the key.
func TestValidateWithoutPositions(t *testing.T) {
	p := &Profile{Name: "p", Host: "h", WorkdirRoot: "~", Shell: "sh", Env: []EnvEntry{{Key: "X", Literal: "a", Ref: Ref{RefSecret, "s"}}}}
	err := p.Validate(nil)
	if err == nil || err.Error() != `env "X": want exactly one of a literal or a reference` {
		t.Fatalf("got %v", err)
	}
	p.Env = []EnvEntry{{Key: "X", Literal: "a"}, {Key: "X", Literal: "b"}}
	if err := p.Validate(nil); err == nil || !strings.Contains(err.Error(), `duplicate env key "X"`) {
		t.Fatalf("got %v", err)
	}
}

func TestValidRoots(t *testing.T) {
	for root, ok := range map[string]bool{
		"~": true, "~/.kandev": true, "/srv/kandev": true, "~/a/b": true,
		"": false, "/": false, "~/": false, "~user/x": false, "rel": false, "/a/": false, "/a//b": false,
		"/a/./b": false, "~/..": false, "/a\nb": false,
	} {
		if validRoot(root) != ok {
			t.Errorf("validRoot(%q) = %v", root, !ok)
		}
	}
}

func TestValidBranches(t *testing.T) {
	for b, ok := range map[string]bool{
		"main": true, "feature/x-1": true, "v1.2": true, "kandev/task_1": true,
		"-x": false, "/a": false, "a/": false, "a..b": false, "a b": false, "a~1": false, "a^": false, "a:b": false,
		"a?": false, "a*": false, "a[": false, "a\\b": false, "a.lock": false, "a.": false, "@": false, "a@{1}": false,
		"a//b": false, "a/.b": false, ".a": false, "a\tb": false,
	} {
		if validBranch(b) != ok {
			t.Errorf("validBranch(%q) = %v", b, !ok)
		}
	}
}

func TestDecodeAgent(t *testing.T) {
	a, err := DecodeAgent("claude.yaml", []byte("name: claude\ncommand: [claude, --verbose, 2]\nenv:\n  ANTHROPIC_API_KEY: {secret: anthropic}\n  MCP_TIMEOUT: 30000\n"))
	if err != nil {
		t.Fatal(err)
	}
	a.src = source{}
	want := &AgentPreset{Name: "claude", Command: []string{"claude", "--verbose", "2"},
		Env: []EnvEntry{{Key: "ANTHROPIC_API_KEY", Ref: Ref{RefSecret, "anthropic"}}, {Key: "MCP_TIMEOUT", Literal: "30000"}}}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("got %+v", a)
	}
	for _, tc := range []struct{ yaml, msg string }{
		{"name: a\ncommand: claude\n", `"command" must be a list, not a str scalar`},
		{"name: a\ncommand: []\n", `"command" must list the program`},
		{"name: a\ncommand: [\"\"]\n", "must start with a program name"},
		{"name: a\ncommand: [[x]]\n", "command[0] must be a string, not a list"},
		{"name: a\ncommand: [x]\nargs: [y]\n", `unknown key "args" in agent`},
		{"name: a\ncommand: [x]\nenv: {TASK_DESCRIPTION: x}\n", "reserved"},
		{"command: [x]\n", `missing "name" in agent`},
	} {
		if _, err := DecodeAgent("a.yaml", []byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: got %v, want ~ %q", tc.yaml, err, tc.msg)
		}
	}
}

func TestParseLaunchEnv(t *testing.T) {
	got, err := ParseLaunchEnv([]string{"A=1", "B=", "C=x=y"})
	want := []EnvEntry{{Key: "A", Literal: "1"}, {Key: "B", Literal: ""}, {Key: "C", Literal: "x=y"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, tc := range []struct{ flag, msg string }{
		{"A", "want KEY=VALUE"},
		{"1A=s3cret", "is not a valid name"},
		{"KANDEV_TASK_ID=s3cret", "reserved"},
		{"TASK_DESCRIPTION=s3cret", "reserved"},
		{"A=s3cret\x00", "NUL"},
	} {
		_, err := ParseLaunchEnv([]string{tc.flag})
		var de *DecodeError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: got %v, want ~ %q", tc.flag, err, tc.msg)
		}
	}
	if _, err := ParseLaunchEnv([]string{"A=1", "A=2"}); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("duplicate: %v", err)
	}
}

func TestEnvEntryJSON(t *testing.T) {
	entries := []EnvEntry{
		{Key: "L", Literal: "v"}, {Key: "E", Literal: ""}, {Key: "S", Ref: Ref{RefSecret, "s"}},
		{Key: "V", Ref: Ref{RefFromEnv, "V"}}, {Key: "F", Ref: Ref{RefFromFile, "/f"}},
	}
	b, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	const want = `[{"key":"L","value":"v"},{"key":"E","value":""},{"key":"S","secret":"s"},{"key":"V","from_env":"V"},{"key":"F","from_file":"/f"}]`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
	var back []EnvEntry
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, entries) {
		t.Fatalf("round trip: %v %v", back, err)
	}
	for _, bad := range []string{`{"key":"A"}`, `{"key":"A","value":"x","secret":"s"}`, `{"key":"A","values":"x"}`, `{"key":"A","secret":null}`} {
		var e EnvEntry
		if err := json.Unmarshal([]byte(bad), &e); err == nil {
			t.Errorf("%s: accepted as %+v", bad, e)
		}
	}
	if _, err := json.Marshal(EnvEntry{Key: "A", Ref: Ref{Kind: "bogus"}}); err == nil {
		t.Fatal("unknown reference kind marshalled")
	}
}

func TestProfileJSON(t *testing.T) {
	p, err := DecodeProfile("prod.yaml", []byte(validProfile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Profile
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.src = p.src
	if !reflect.DeepEqual(&back, p) {
		t.Fatalf("round trip:\n %+v\n %+v", p, &back)
	}
	empty, _ := json.Marshal(Profile{Repositories: []Repository{{Name: "a"}}})
	if !strings.Contains(string(empty), `"env":[]`) || !strings.Contains(string(empty), `"secrets":[]`) {
		t.Fatalf("empty lists must be []: %s", empty)
	}
	agent, _ := json.Marshal(AgentPreset{Name: "a"})
	if string(agent) != `{"name":"a","command":[],"env":[]}` {
		t.Fatalf("agent: %s", agent)
	}
}

// Ref names stay out of %v, %+v and %#v.
func TestRefFormattingHidesName(t *testing.T) {
	e := EnvEntry{Key: "K", Ref: Ref{RefSecret, "REFNAME"}}
	d := Definition{Key: "K", Origin: EP, Ref: e.Ref}
	for _, s := range []string{e.String(), d.String(), e.Ref.String(), e.Ref.GoString()} {
		if strings.Contains(s, "REFNAME") {
			t.Fatalf("leak: %s", s)
		}
	}
	if got := e.String(); got != "K={secret: ***}" {
		t.Fatalf("got %q", got)
	}
	if got := d.String(); got != "K from executor profile (secret)" {
		t.Fatalf("got %q", got)
	}
}
