package profiles

import (
	"strings"
)

// Field documents one key of a profile or agent file. `kandev-exec help
// profile`, docs/profiles.md and the decoder's "did you mean" all read the
// tables below, and a test holds them to the schema's fields, so the
// reference cannot drift from what the decoder accepts.
type Field struct {
	Key      string `json:"key"`  // "name", "repositories[].url"
	Type     string `json:"type"` // as a person reads it
	Required bool   `json:"required"`
	Default  string `json:"default"` // what an absent key means; "" when Required
	Example  string `json:"example"` // the value as written in the file
	Doc      string `json:"doc"`
}

// ProfileFields is every key of a profile file, in file order.
var ProfileFields = []Field{
	{Key: "name", Type: "string", Required: true, Example: "prod",
		Doc: "The profile's name, as `task launch --profile NAME` gives it: letters, digits, '.', '_' and '-', at most 128 bytes."},
	{Key: "host", Type: "string", Required: true, Example: "prod",
		Doc: "A host added with `kandev-exec host add`; `profile apply` refuses a host it does not know."},
	{Key: "workdir_root", Type: "path", Default: "the host's root (host add --workdir-root, else ~/.kandev)", Example: "~/.kandev",
		Doc: "Where task directories are made on the host (<root>/tasks/<task>): ~, ~/PATH or /PATH, without . or .. segments. " +
			"It must be yours alone: made 0700 when absent, and a launch refuses it, or any directory above it, when another user owns it or can write it (as OpenSSH's StrictModes; a sticky world-writable directory such as /tmp may sit above it). A shared place like /srv needs a directory of your own under it."},
	{Key: "shell", Type: "string", Default: DefaultShell, Example: "bash",
		Doc: "The login shell that runs the prepare and cleanup scripts and the agent command: one of " + strings.Join(posixShells, ", ") + "."},
	{Key: "env", Type: "mapping of KEY to a value or a reference", Default: "{}", Example: "{NODE_ENV: production, API_TOKEN: {secret: api-token}}",
		Doc: "Variables every task of this profile gets (origin `executor profile`, tier 1). A value is a string as written (PORT: 8080 is \"8080\"), or a reference fetched at launch on this machine: " +
			refForms + ". Keys keep their case and match [A-Za-z_][A-Za-z0-9_]*; KANDEV_* and TASK_DESCRIPTION are reserved."},
	{Key: "repositories", Type: "list of repositories", Default: "[]", Example: "[{name: app, url: /srv/git/app.git}]",
		Doc: "The checkouts each task gets. The first is the primary, checked out at the task directory's root on the task's own branch (kandev/<task>); the others go in subdirectories named after them."},
	{Key: "repositories[].name", Type: "string", Required: true, Example: "app",
		Doc: "The repository's name: its subdirectory for all but the first, and its origin label (`repository NAME`) in `profile env --explain`."},
	{Key: "repositories[].url", Type: "string", Required: true, Example: "git@github.com:acme/app.git",
		Doc: "Any URL git on the host can clone, with the host's own credentials. `task launch --repo URL` replaces the first repository's."},
	{Key: "repositories[].branch", Type: "string", Default: "the remote's default branch", Example: "main",
		Doc: "The branch each task's branch starts from."},
	{Key: "repositories[].secrets", Type: "mapping of KEY to {secret: NAME}", Default: "{}", Example: "{DEPLOY_TOKEN: {secret: deploy}}",
		Doc: "Variables bound to this repository (origin `repository NAME`, tier 1): secret references only, never literals."},
	{Key: "prepare_script", Type: "string", Default: `""`, Example: "npm ci",
		Doc: "Runs in the task directory after the checkout, under `shell`, with the task's environment; output is masked and a non-zero exit fails the launch. A profile needs repositories or a prepare script: with neither a task would have nothing to run in."},
	{Key: "prepare_timeout", Type: "duration", Default: "10m", Example: "15m",
		Doc: "Bounds the checkout, and then the prepare script: each may take this long. Between 1s and 24h."},
	{Key: "cleanup_script", Type: "string", Default: `""`, Example: "docker compose down",
		Doc: "Runs on the host when the task is archived or deleted, before its directory may be reclaimed: the script (with shell, env and reclaim_task_dir) as it was when the task was launched."},
	{Key: "reclaim_task_dir", Type: "boolean", Default: "false", Example: "true",
		Doc: "true lets archive and delete remove the task directory, once its safety checks prove nothing of value would be lost."},
	{Key: "max_runtime", Type: "duration", Default: "no bound", Example: "8h",
		Doc: "How long an agent may run. The controller enforces it on the host, with no CLI connected: at the bound the agent gets SIGTERM, then SIGKILL of its process group after the stop grace, and the session ends `stopped` with stop_reason `max_runtime`. `task launch --max-runtime D` may only shorten it; `task ls` shows what is left. Between 1s and 8760h."},
	{Key: "idle_timeout", Type: "duration", Default: "no bound", Example: "30m",
		Doc: "How long an agent may go without writing any output: then it is stopped as at max_runtime, with stop_reason `idle_timeout`. Between 1s and 8760h."},
	{Key: "archive_after", Type: "duration", Default: `"" (never)`, Example: "72h",
		Doc: "`sweep` archives a task whose sessions all ended this long ago and that nothing touched since (no launch, resume, exec or shell), then reclaims as usual; `task ls` shows when. At least 1m."},
}

// AgentFields is every key of an agent preset file (`agent apply -f`).
var AgentFields = []Field{
	{Key: "name", Type: "string", Required: true, Example: "claude",
		Doc: "The preset's name, as `task launch --agent NAME` gives it."},
	{Key: "command", Type: "list of strings", Required: true, Example: "[claude, --print]",
		Doc: "The agent's program and arguments; `task launch --agent NAME -- ARG...` appends ARGs. Run by the profile's shell in the task directory."},
	{Key: "env", Type: "mapping of KEY to a value or a reference", Default: "{}", Example: "{ANTHROPIC_API_KEY: {secret: anthropic}}",
		Doc: "Variables of this agent (origin `agent profile`, tier 2): the profile, repositories and --env win over them."},
}

// ExampleProfile is a complete profile file that sets every key. The
// reference shows it, and a test decodes it.
const ExampleProfile = `name: prod
host: prod                           # a host from kandev-exec host add
workdir_root: ~/.kandev              # where task directories go on the host
shell: bash                          # runs the scripts and the agent, as a login shell
env:
  NODE_ENV: production               # a literal
  API_TOKEN: {secret: api-token}     # kandev-exec secret set api-token < token.txt
  GH_TOKEN: {from_env: GH_TOKEN}     # from your environment when you launch
  CA_CERT: {from_file: ~/certs/ca.pem}
repositories:                        # the first is the primary checkout
  - name: app
    url: git@github.com:acme/app.git # any URL git on the host can clone
    branch: main                     # each task branches from here
    secrets: {DEPLOY_TOKEN: {secret: deploy}}
  - name: docs                       # checked out in the docs/ subdirectory
    url: https://github.com/acme/docs.git
prepare_script: |                    # in the task directory, after the checkout
  npm ci
prepare_timeout: 15m
cleanup_script: ""
reclaim_task_dir: false
max_runtime: 8h                      # the agent is stopped after this long
idle_timeout: 30m                    # or after this long without output
archive_after: 72h                   # sweep archives a task idle this long
`

// ExampleAgent is a complete agent preset file.
const ExampleAgent = `name: claude
command: [claude, --print]
env:
  ANTHROPIC_API_KEY: {secret: anthropic}
  MODEL: sonnet
`

// keysAt lists the keys of fields under prefix ("" for the top level,
// "repositories[]." for a repository), for "did you mean".
func keysAt(fields []Field, prefix string) []string {
	var out []string
	for _, f := range fields {
		rest, ok := strings.CutPrefix(f.Key, prefix)
		if ok && !strings.Contains(rest, ".") {
			out = append(out, rest)
		}
	}
	return out
}
