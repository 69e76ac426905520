package bench

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// childAttr puts a child in a process group of its own (a Ctrl-C reaches
// the bench alone, which stops its children in order) and has the kernel
// send it SIGTERM should the bench die without stopping it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// realtime gives the calling thread real-time priority (SCHED_FIFO, the
// lowest level): no thread of normal priority (all of hookline's and
// PostgreSQL's) runs on its core until it blocks; interrupts and the
// kernel's own real-time threads still can. It fails without the
// privilege (CAP_SYS_NICE).
func realtime() error {
	return unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0)
}

// walDevice is the "major:minor" of the device holding path, or "".
func walDevice(path string) string {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return ""
	}
	return strconv.FormatUint(uint64(unix.Major(st.Dev)), 10) + ":" + strconv.FormatUint(uint64(unix.Minor(st.Dev)), 10)
}
