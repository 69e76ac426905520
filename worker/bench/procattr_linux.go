package bench

import "syscall"

// childAttr puts a child in a process group of its own (a Ctrl-C reaches
// the bench alone, which stops its children in order) and has the kernel
// send it SIGTERM should the bench die without stopping it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
