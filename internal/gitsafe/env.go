package gitsafe

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NoCode are the overrides every git run in an untrusted checkout takes:
// no program of the checkout's choosing runs from its hooks or its file
// system monitor. Command-scope configuration beats the checkout's own.
var NoCode = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
}

// dropEnv: variables of our own environment that would point git at
// another repository, work tree, object store or configuration than the
// checkout meant. Those a caller appends override them (the last of a
// name wins).
var dropEnv = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
	"GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_",
	"GIT_CONFIG_VALUE_", "GIT_REPLACE_REF_BASE"}

// Environ is this process's environment without dropEnv.
func Environ() []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, k := range dropEnv {
			if strings.HasPrefix(kv, k) && (strings.HasSuffix(k, "_") || strings.HasPrefix(kv, k+"=")) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}

// FilterOverrides empty the commands of every filter driver the checkout
// defines: git then stores and compares content as it is.
func (c Config) FilterOverrides() [][2]string {
	var over [][2]string
	for _, d := range c.FilterDrivers() {
		for _, k := range []string{"clean", "smudge", "process"} {
			over = append(over, [2]string{"filter." + d + "." + k, ""})
		}
	}
	return over
}

// ConfigEnv passes over to git as configuration of command scope.
func ConfigEnv(over [][2]string) []string {
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(over))}
	for i, kv := range over {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}
