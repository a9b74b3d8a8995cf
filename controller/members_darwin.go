package controller

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// groupMembers lists the processes of process group pgid with their names
// (the kernel's comm, never the arguments, which may carry secrets).
func groupMembers(pgid int) []Process {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return nil
	}
	var ps []Process
	for _, kp := range kps {
		if kp.Proc.P_stat == sZomb {
			continue
		}
		name := kp.Proc.P_comm[:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		ps = append(ps, Process{PID: int(kp.Proc.P_pid), Name: string(name)})
	}
	return ps
}
