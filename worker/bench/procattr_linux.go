package bench

import (
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
// lowest level): no other thread of the machine's kernel runs on its core
// until it blocks. It fails without the privilege (CAP_SYS_NICE).
func realtime() error {
	return unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1}, 0)
}
