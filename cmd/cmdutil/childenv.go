package cmdutil

import (
	"os"
	"strings"
)

// ChildEnv is the environment of a background process this one starts
// with no flags of its own (a host's drain worker): this process's
// environment with every global setting it resolved (from a flag, the
// environment or the config file) put in its environment twin, so the
// child works on the same store with the same settings. Nothing goes on
// the child's command line; the store password travels, if at all, the
// way it came (KANDEV_EXEC_STORE_PASSWORD). The child writes to a log,
// so NO_COLOR is set.
func (f *Factory) ChildEnv() ([]string, error) {
	s, err := f.Settings()
	if err != nil {
		return nil, err
	}
	set := map[string]string{}
	for _, g := range GlobalSettings {
		if g.Env != "" && f.v.IsSet(g.Key) {
			set[g.Env] = f.v.GetString(g.Key)
		}
	}
	set["KANDEV_EXEC_STATE_DIR"] = s.StateDir
	delete(set, "KANDEV_EXEC_CONFIG")
	if _, err := os.Stat(s.ConfigFile); err == nil {
		set["KANDEV_EXEC_CONFIG"] = s.ConfigFile
	}
	set["NO_COLOR"] = "1"
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env, nil
}
