package cmdutil

import (
	"errors"
	"strings"
	"testing"
)

func TestParseStoreURL(t *testing.T) {
	good := map[string]string{
		"":                         "file:/state",
		"file:":                    "file:/state",
		"file:/srv/kandev":         "file:/srv/kandev",
		"file:///srv/kandev/":      "file:/srv/kandev",
		"etcd://a:2379,b/team/k":   "etcd://a:2379,b:2379/team/k",
		"etcd://127.0.0.1:2379/k/": "etcd://127.0.0.1:2379/k",
	}
	for in, want := range good {
		u, err := ParseStoreURL(in, "/state")
		if err != nil || u.String() != want {
			t.Errorf("ParseStoreURL(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, bad := range []string{"file:rel", "etcd://", "etcd://h:2379", "http://h/p", "/srv/kandev", "etcd:/h/p"} {
		_, err := ParseStoreURL(bad, "/state")
		var fe *FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseStoreURL(%q) = %v; want a usage error naming it", bad, err)
		}
	}
}
