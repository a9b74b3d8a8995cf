package controller

import (
	"bytes"
	"encoding/binary"
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// sZomb is p_stat of a zombie (SZOMB in <sys/proc.h>).
const sZomb = 5

// procStat reads a process's start time (microseconds since the epoch, from
// kinfo_proc) and whether it is alive; a zombie is not.
func procStat(pid int) (start uint64, alive bool, err error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.pid", pid)
	if err != nil {
		return 0, false, err
	}
	if len(kps) == 0 {
		return 0, false, nil
	}
	p := kps[0].Proc
	start = uint64(p.P_starttime.Sec)*1e6 + uint64(p.P_starttime.Usec)
	return start, p.P_stat != sZomb, nil
}

// procArgs returns a process's argv from kern.procargs2: argc, the exec
// path, NUL padding, then argc NUL-terminated arguments (then the env,
// which is not read).
func procArgs(pid int) ([]string, error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, err
	}
	if len(b) < 4 {
		return nil, errors.New("short kern.procargs2")
	}
	argc := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, errors.New("malformed kern.procargs2")
	}
	b = bytes.TrimLeft(b[i:], "\x00")
	args := make([]string, 0, argc)
	for len(args) < argc && len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			i = len(b)
		}
		args = append(args, string(b[:i]))
		b = b[min(i+1, len(b)):]
	}
	return args, nil
}

// groupAlive reports whether any process is in process group pgid (launchd
// reaps orphans promptly, so kill(2) is enough here).
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
