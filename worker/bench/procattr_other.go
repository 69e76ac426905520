//go:build !linux

package bench

import (
	"errors"
	"syscall"
)

// childAttr puts a child in a process group of its own; only Linux can
// also have it signalled when the bench dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// realtime is Linux's only (procattr_linux.go).
func realtime() error { return errors.ErrUnsupported }

// walDevice is Linux's only (procattr_linux.go): /proc/diskstats is.
func walDevice(string) string { return "" }
