package ssh

import (
	"context"
	"fmt"
)

// SFTPServed asks the server to start its SFTP subsystem on a session of
// its own, closed at once: nil when it does.
func (c *Client) SFTPServed(ctx context.Context) error {
	sess, end, err := c.openSession(ctx)
	if err != nil {
		return err
	}
	defer end()
	if err := sess.RequestSubsystem("sftp"); err != nil {
		return fmt.Errorf("sftp on %s: %w", c.Target.Label(), err)
	}
	return nil
}
