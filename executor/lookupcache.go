package executor

import (
	"encoding/json"
	"path/filepath"

	"github.com/kdlbs/kandev-exec/internal/fsx"
	"github.com/kdlbs/kandev-exec/ssh/sshconfig"
)

// lookupsFile keeps a host listing's ssh config answers for the next one
// (one `ssh -G` per host otherwise). It is only a cache: the answers are
// reused while every config file reads as it did (sshconfig.LookupCache),
// and a file that cannot be read or written only means looking up again.
const lookupsFile = "sshconfig-lookups.json"

// maxLookupsFile bounds what is read back: thousands of hosts fit.
const maxLookupsFile = 32 << 20

// restoredLookups is a LookupCache seeded from the last listing's answers.
func (e *Executor) restoredLookups(opts sshconfig.ResolveOptions) *sshconfig.LookupCache {
	c := sshconfig.NewLookupCache()
	if e.cfg.StateDir == "" {
		return c
	}
	var saved sshconfig.Saved
	if data, err := fsx.ReadFileMax(filepath.Join(e.cfg.StateDir, lookupsFile), maxLookupsFile); err == nil && json.Unmarshal(data, &saved) == nil {
		c.Restore(saved, opts)
	} else {
		c.Restore(sshconfig.Saved{}, opts)
	}
	return c
}

// saveLookups keeps c's answers when they are new and still current.
func (e *Executor) saveLookups(c *sshconfig.LookupCache, opts sshconfig.ResolveOptions) {
	saved, ok := c.Snapshot(opts)
	if !ok || e.cfg.StateDir == "" {
		return
	}
	data, err := json.Marshal(saved)
	if err != nil {
		return
	}
	if _, err := fsx.EnsureDir(e.cfg.StateDir, 0o700); err == nil {
		_ = fsx.WriteFile(filepath.Join(e.cfg.StateDir, lookupsFile), data, false)
	}
}
