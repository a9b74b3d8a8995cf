package mux

import "net"

// peerUID is the user id of the process at the other end of c, as the
// kernel recorded it when the connection was made (credUID, per system).
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid, cerr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, cerr = credUID(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, cerr
}
