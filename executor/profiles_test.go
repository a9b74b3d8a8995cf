package executor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kdlbs/kandev-exec/internal/redact"
	"github.com/kdlbs/kandev-exec/profiles"
	"github.com/kdlbs/kandev-exec/records"
	"github.com/kdlbs/kandev-exec/state"
)

func newTestExecutor(t *testing.T) *Executor {
	t.Helper()
	dir := t.TempDir()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := New(Config{Store: st, StateDir: dir})
	data, _ := json.Marshal(records.Host{Name: "prod", Alias: "prod", WorkdirRoot: records.DefaultWorkdirRoot, Status: records.HostAdmitted})
	if _, err := st.Create(context.Background(), records.KindHost, "prod", data, state.Event{Type: "host.added"}); err != nil {
		t.Fatal(err)
	}
	return e
}

const baseProfile = `name: web
host: prod
env:
  A: one
  B: {secret: tok}
  C: three
repositories: [{name: app, url: /srv/git/app.git}]
`

func TestApplyProfileReportsChangesByName(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	res, err := e.ApplyProfile(ctx, "web.yaml", []byte(baseProfile))
	if err != nil || res.Action != ActionCreated || res.Revision != 1 {
		t.Fatalf("create: %+v, %v", res, err)
	}
	res, err = e.ApplyProfile(ctx, "web.yaml", []byte(baseProfile))
	if err != nil || res.Action != ActionUnchanged || res.Revision != 1 {
		t.Fatalf("unchanged: %+v, %v", res, err)
	}
	changed := "name: web\nhost: prod\nshell: bash\nenv:\n  A: uno\n  C: three\n  D: {from_env: D}\nrepositories: [{name: app, url: /srv/git/app.git}]\n"
	res, err = e.ApplyProfile(ctx, "web.yaml", []byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	want := ApplyResult{Kind: "profile", Name: "web", Action: ActionUpdated, Revision: 2,
		Changed: []string{"env", "shell"}, EnvAdded: []string{"D"}, EnvRemoved: []string{"B"}, EnvChanged: []string{"A"}}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("update:\n got %+v\nwant %+v", res, want)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), "uno") || strings.Contains(string(b), "one") {
		t.Fatalf("result leaks a value: %s", b)
	}
}

func TestApplyProfileNeedsAKnownHost(t *testing.T) {
	e := newTestExecutor(t)
	_, err := e.ApplyProfile(context.Background(), "x.yaml", []byte("name: x\nhost: nosuch\nrepositories: [{name: app, url: /u}]\n"))
	var de *profiles.DecodeError
	if !errors.As(err, &de) || de.Line != 2 || !strings.Contains(err.Error(), `host "nosuch" is not a known host`) {
		t.Fatalf("got %v", err)
	}
}

// A dry run reports what an apply would do, by name only, and writes
// nothing: the record stays absent, then stays at its revision.
func TestPlanProfileWritesNothing(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	res, err := e.PlanProfile(ctx, "web.yaml", []byte(baseProfile))
	if err != nil || res.Action != ActionCreated || res.Revision != 0 || !res.DryRun {
		t.Fatalf("plan a create: %+v, %v", res, err)
	}
	if _, err := e.ShowProfile(ctx, "web"); err == nil {
		t.Fatal("a dry run created the profile")
	}
	if _, err := e.ApplyProfile(ctx, "web.yaml", []byte(baseProfile)); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(baseProfile, "A: one", "A: uno", 1)
	res, err = e.PlanProfile(ctx, "web.yaml", []byte(changed))
	want := ApplyResult{Kind: "profile", Name: "web", Action: ActionUpdated, Revision: 1, DryRun: true,
		Changed: []string{"env"}, EnvAdded: []string{}, EnvRemoved: []string{}, EnvChanged: []string{"A"}}
	if err != nil || !reflect.DeepEqual(res, want) {
		t.Fatalf("plan an update:\n got %+v, %v\nwant %+v", res, err, want)
	}
	v, err := e.ShowProfile(ctx, "web")
	if err != nil || v.Revision != 1 || v.Profile.Env[0].Literal != "one" {
		t.Fatalf("a dry run changed the profile: %+v, %v", v, err)
	}
	res, err = e.PlanProfile(ctx, "web.yaml", []byte(baseProfile))
	if err != nil || res.Action != ActionUnchanged || res.Revision != 1 {
		t.Fatalf("plan no change: %+v, %v", res, err)
	}
	// The same checks as an apply: an unknown host fails the plan too.
	if _, err := e.PlanProfile(ctx, "web.yaml", []byte(strings.Replace(baseProfile, "host: prod", "host: nosuch", 1))); err == nil {
		t.Fatal("a dry run accepted an unknown host")
	}
}

// A profile with neither repositories nor a prepare script is refused
// when applied, naming the file, and nothing is stored.
func TestApplyProfileRefusesOneThatCannotLaunch(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	_, err := e.ApplyProfile(ctx, "bare.yaml", []byte("name: bare\nhost: prod\n"))
	var de *profiles.DecodeError
	if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), `bare.yaml: profile "bare" cannot launch`) {
		t.Fatalf("got %v", err)
	}
	if _, err := e.ShowProfile(ctx, "bare"); err == nil {
		t.Fatal("the refused profile was stored")
	}
}

func TestRemoveProfileRefusedWhileTasksUseIt(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	if _, err := e.ApplyProfile(ctx, "web.yaml", []byte(baseProfile)); err != nil {
		t.Fatal(err)
	}
	st := e.Store()
	for name, task := range map[string]records.Task{
		"t1": {Profile: "web", Phase: records.PhaseReady},
		"t2": {Profile: "other", Phase: records.PhaseReady},
		"t3": {Profile: "web", Phase: records.PhaseAbsent}, // archived: needs the profile no more
	} {
		task.ID = name
		data, _ := json.Marshal(task)
		if _, err := st.Create(ctx, records.KindTask, name, data, state.Event{Type: "task.created"}); err != nil {
			t.Fatal(err)
		}
	}
	err := e.RemoveProfile(ctx, "web", false)
	var inUse *InUseError
	if !errors.As(err, &inUse) || !reflect.DeepEqual(inUse.Users, []string{"task t1"}) {
		t.Fatalf("got %v", err)
	}
	if _, err := e.ShowProfile(ctx, "web"); err != nil {
		t.Fatalf("refused removal removed it: %v", err)
	}
	if err := e.RemoveProfile(ctx, "web", true); err != nil {
		t.Fatal(err)
	}
	var nf *records.NotFoundError
	if _, err := e.ShowProfile(ctx, "web"); !errors.As(err, &nf) {
		t.Fatalf("after --force: %v", err)
	}
}

func TestRemoveAgentRefusedWhileTasksUseIt(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	if _, err := e.ApplyAgent(ctx, "a.yaml", []byte("name: claude\ncommand: [claude]\n")); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"profile": "web", "agent": "claude"})
	if _, err := e.Store().Create(ctx, records.KindTask, "t1", data, state.Event{Type: "task.created"}); err != nil {
		t.Fatal(err)
	}
	var inUse *InUseError
	if err := e.RemoveAgent(ctx, "claude", false); !errors.As(err, &inUse) {
		t.Fatalf("got %v", err)
	}
	if err := e.RemoveAgent(ctx, "claude", true); err != nil {
		t.Fatal(err)
	}
}

func TestProfileEnvMasksAndExplains(t *testing.T) {
	ctx := context.Background()
	e := newTestExecutor(t)
	if _, err := e.ApplyProfile(ctx, "web.yaml", []byte(baseProfile)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ApplyAgent(ctx, "a.yaml", []byte("name: claude\ncommand: [claude]\nenv:\n  C: agent\n  E: agent\n")); err != nil {
		t.Fatal(err)
	}
	entries, err := e.ProfileEnv(ctx, EnvOptions{Profile: "web", Agent: "claude", Launch: []string{"E=launch"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]profiles.ExplainEntry{}
	for _, x := range entries {
		got[x.Key] = x
	}
	if b := got["B"]; !b.Secret || b.Value != redact.Mask {
		t.Errorf("secret not masked: %+v", b)
	}
	// Secret tok was never set: the preflight says so and what to run.
	if b := got["B"]; b.Resolved || b.Problem != "secret \"tok\" is not set: run `kandev-exec secret set tok`" {
		t.Errorf("unset secret B: %+v", b)
	}
	if a := got["A"]; !a.Resolved || a.Problem != "" {
		t.Errorf("literal A: %+v", a)
	}
	if c := got["C"]; c.Value != "three" || !reflect.DeepEqual(c.Overridden, []string{"agent profile"}) {
		t.Errorf("C: %+v", c)
	}
	if x := got["E"]; x.Value != "launch" || !reflect.DeepEqual(x.Origins, []string{"launch"}) {
		t.Errorf("E: %+v", x)
	}
	if x := got[profiles.EnvTaskID]; x.Value != "<task id>" {
		t.Errorf("runtime placeholder: %+v", x)
	}
	if _, _, err := e.Vault().SetSecret(ctx, "tok", []byte("tok-value")); err != nil {
		t.Fatal(err)
	}
	entries, err = e.ProfileEnv(ctx, EnvOptions{Profile: "web"})
	for _, x := range entries {
		if x.Key == "B" && (!x.Resolved || x.Problem != "" || x.Value != redact.Mask) {
			t.Errorf("set secret B: %+v, %v", x, err)
		}
	}
	_, err = e.ProfileEnv(ctx, EnvOptions{Profile: "web", Launch: []string{"A=other"}})
	var ce *profiles.ConflictError
	if !errors.As(err, &ce) || ce.Key != "A" || !reflect.DeepEqual(ce.Origins, []string{"executor profile", "launch"}) {
		t.Fatalf("conflict: %v", err)
	}
}
