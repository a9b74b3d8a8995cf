package etcdtest

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EnableAuth creates user with password, allowed to read and write the
// keys under prefix only, and turns authentication on. The fixture's own
// clients use root from then on.
func (c *Cluster) EnableAuth(user, password, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := c.Client()
	if err != nil {
		return err
	}
	defer cli.Close()
	const role = "etcdtest-prefix"
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", rootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, role); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, role, prefix, clientv3.GetPrefixRangeEnd(prefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, user, password); return err },
		func() error { _, err := cli.UserGrantRole(ctx, user, role); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("etcdtest: enabling auth: %w", err)
		}
	}
	c.auth = true
	return nil
}

// rootPassword is the fixture's root password; tests never use root.
const rootPassword = "etcdtest-root"
